"""A 201's `createdAt` must fit the sale's time on the service's own clock.

A hostile or broken service (a cache replaying an old answer, a key mix-up) may answer
the sale's key with a transaction of the right amount and shape but committed long before
(or after) the sale. The reply is placed against its own `Date` and the local seconds since
the sale's first request, so no kiosk clock is involved; `max_clock_skew_s` of slack lets
an honest replay through a service clock that stepped between the commit and the replay.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.ledger.reply_checks import STAMPS_AHEAD_S
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport

SLACK_S = RetryPolicy.testing().max_clock_skew_s


class Backdated(httpx.AsyncBaseTransport):
    """The real sandbox; while `shift` is set, a 201 names a row committed `shift` away."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.shift: timedelta | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code != 201 or self.shift is None:
            return response
        body = json.loads(await response.aread())
        created = datetime.fromisoformat(body["createdAt"].replace("Z", "+00:00")) + self.shift
        body.update(
            {
                "id": "tx_0ld0ne0000000000000000",
                "createdAt": created.isoformat().replace("+00:00", "Z"),
            }
        )
        return httpx.Response(201, headers={"date": response.headers["date"]}, json=body)


class StepAfterCommit(httpx.AsyncBaseTransport):
    """The real sandbox; the first 201 is lost and the service's clock steps right after,
    so the same-key retry replays the commit under a `Date` `step_s` away."""

    def __init__(self, inner: httpx.AsyncBaseTransport, sandbox: Sandbox, step_s: float) -> None:
        self.inner, self.sandbox, self.step_s = inner, sandbox, step_s
        self.dropped = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code == 201 and not self.dropped:
            self.dropped = True
            self.sandbox.set_clock_offset(self.step_s)
            raise httpx.ReadTimeout("reply lost after commit", request=request)
        return response


def _client(terminal: TerminalCredentials, transport: httpx.AsyncBaseTransport) -> TerminalClient:
    return TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    )


@pytest.mark.parametrize(
    "shift",
    [
        timedelta(days=-6 * 365),  # the old cached answer of the issue
        timedelta(hours=-1),
        timedelta(seconds=-(SLACK_S + 120)),
        timedelta(seconds=STAMPS_AHEAD_S + 3600),  # "committed" a day after the reply
        timedelta(days=3 * 365),
    ],
    ids=str,
)
async def test_a_201_committed_far_from_the_sale_is_not_approved(
    ledger: Ledger,
    sim_app: Any,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    shift: timedelta,
) -> None:
    transport = Backdated(asgi_transport(sim_app))
    client = _client(terminal, transport)
    try:
        desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing())
        assert (await desk.charge(100, sandbox.create_wallet(1_000).qr_token, deadline_s=5)).charged
        transport.shift = shift
        result = await desk.charge(500, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    finally:
        await client.aclose()
    assert result.state is IntentState.NEEDS_REVIEW and result.charged is None
    assert "outside this sale's time" in (result.message or "")
    [review] = desk.listing.reviews()
    assert review.reason == "reply_mismatch"


@pytest.mark.parametrize("step_s", [-7200.0, -1200.0, -600.0, -150.0, 150.0, 600.0])
async def test_an_honest_replay_across_a_service_clock_step_is_approved(
    ledger: Ledger,
    sim_app: Any,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    step_s: float,
) -> None:
    client = _client(terminal, StepAfterCommit(asgi_transport(sim_app), sandbox, step_s))
    wallet = sandbox.create_wallet(10_000)
    try:
        desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing())
        result = await desk.charge(500, wallet.qr_token, deadline_s=5)
    finally:
        await client.aclose()
    assert result.state is IntentState.APPROVED and result.charged is True
    charged = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    assert [tx.id for tx in charged] == [result.transaction.id if result.transaction else None]


async def test_a_201_within_its_time_is_approved_without_a_date(
    ledger: Ledger, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    class NoDate(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await asgi_transport(sim_app).handle_async_request(request)
            body = await response.aread()
            headers = {k: v for k, v in response.headers.items() if k.lower() != "date"}
            return httpx.Response(response.status_code, headers=headers, content=body)

    client = _client(terminal, NoDate())
    try:
        desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing())
        result = await desk.charge(500, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    finally:
        await client.aclose()
    assert result.state is IntentState.APPROVED


@pytest.mark.parametrize("back_s", [1200.0, 7200.0])
async def test_a_fresh_commit_stamped_at_the_high_water_mark_is_approved(
    desk: ChargeDesk, sandbox: Sandbox, back_s: float
) -> None:
    """The service's clock stepped back: its commit times never go back, so it stamps at
    the old high-water mark, ahead of its own `Date` (the 1000-sale campaign's case)."""
    sandbox.set_clock_offset(back_s / 2)
    assert (await desk.charge(100, sandbox.create_wallet(1_000).qr_token, deadline_s=5)).charged
    sandbox.set_clock_offset(-back_s / 2)
    wallet = sandbox.create_wallet(10_000)
    result = await desk.charge(500, wallet.qr_token, deadline_s=5)
    assert result.state is IntentState.APPROVED, result.message
    assert result.transaction is not None
    assert result.transaction.created_at > datetime.now(UTC) + timedelta(seconds=back_s / 3)
