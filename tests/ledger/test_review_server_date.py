"""A garbage `Date` header is no clock measurement.

The spec says nothing of `Date`; the kiosk measures the service's clock from it. A reply
stamped year 9999 (or year 1) was stored as the offset, and every later window raised
`ValueError: year 10000 is out of range`: the next sale with a lost reply crashed its
resolve (and every recovery after it) although the service answered; inside a commit the
same `ValueError` was reported as "the outbox is damaged".
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport

GARBAGE = ["Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT"]


class Stamped(httpx.AsyncBaseTransport):
    """The real sandbox; the next `count` responses carry `date` instead of the real one."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner, self.date, self.count = inner, "", 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if not self.count:
            return response
        self.count -= 1
        body = await response.aread()
        skip = ("date", "content-length")
        headers = {k: v for k, v in response.headers.items() if k.lower() not in skip}
        return httpx.Response(
            response.status_code, headers={**headers, "date": self.date}, content=body
        )


@pytest.mark.parametrize("date", GARBAGE)
@pytest.mark.parametrize("where", ["charge_reply", "history_page"])
async def test_a_garbage_date_does_not_stop_the_next_sale_from_resolving(
    ledger: Ledger,
    sim_app: Any,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    date: str,
    where: str,
) -> None:
    transport = Stamped(asgi_transport(sim_app))
    client = TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    )
    try:
        desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing(max_sends=2))
        transport.date, transport.count = date, 1
        if where == "history_page":
            # an earlier sale whose reply was lost: its look-up's page carries the garbage
            sandbox.arm_fault("drop_after_commit", count=2, operation="charge")
        first = await desk.charge(100, sandbox.create_wallet(1_000).qr_token, deadline_s=5)
        if where == "charge_reply" and date.endswith(" 0001 00:00:00 GMT"):
            # email dates read year 0001 as 2001: a plausible `Date`, 25 years from the
            # 201's own `createdAt`, so the reply contradicts itself and a person decides
            assert first.state is IntentState.NEEDS_REVIEW
            assert "outside this sale's time" in (first.message or "")
        else:
            assert first.charged is True
        wallet = sandbox.create_wallet(10_000)
        sandbox.arm_fault("drop_after_commit", count=2, operation="charge")
        result = await desk.charge(500, wallet.qr_token, deadline_s=5)
    finally:
        await client.aclose()
    [tx] = [t.id for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]
    # proven by the history, or by the same key's replay once the service answers again
    assert result.state in (IntentState.CHARGED_PER_HISTORY, IntentState.APPROVED)
    assert result.transaction is not None and result.transaction.id == tx
