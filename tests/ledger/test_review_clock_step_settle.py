"""A Pi's clock stepped forward while a request it gave up on may still commit.

`absence` waits `settle_s` for late commits on the kiosk's wall clock. When NTP steps the
Pi's clock forward (it booted slow) right after a request timed out, the step counts as
waited time: the resend horizon and `settle_s` pass at once, the first look-up's `Date`
disagrees (one "wait"), the next one says "not charged", within a second of real time.
The request the kiosk gave up on then commits: the customer pays, the cashier was told
"not charged". Now the wait is also counted in real seconds on this boot
(`clock.boot_stamp`, CLOCK_BOOTTIME), which NTP never steps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport

STEP_S = 600.0


class LateCommit(httpx.AsyncBaseTransport):
    """While `hold`: the next charge request is kept (the server has it; its reply never
    comes: a timeout). The kiosk's clock steps forward after the next history page."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner, self.hold, self.ahead_s = inner, False, 0.0
        self.kept: httpx.Request | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.hold and request.method == "POST" and self.kept is None:
            await request.aread()
            self.kept = request
            raise httpx.ReadTimeout("timed out waiting for the response", request=request)
        response = await self.inner.handle_async_request(request)
        if self.kept is not None and request.method == "GET":
            self.ahead_s = STEP_S  # NTP steps the Pi's clock
        return response


async def test_a_forward_step_of_the_kiosk_clock_does_not_skip_settling(
    ledger: Ledger, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    transport = LateCommit(asgi_transport(sim_app))
    client = TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    )
    try:
        desk = ChargeDesk(
            ledger,
            client,
            policy=RetryPolicy.testing(max_sends=1, resend_horizon_s=60, settle_s=5),
            clock=lambda: datetime.now(UTC) + timedelta(seconds=transport.ahead_s),
        )
        earlier = await desk.charge(100, sandbox.create_wallet(1_000).qr_token, deadline_s=5)
        assert earlier.charged  # the service's clock is measured before the sale
        wallet = sandbox.create_wallet(10_000)
        transport.hold = True
        result = await desk.charge(500, wallet.qr_token, deadline_s=2)
    finally:
        await client.aclose()
    # well within settle_s of real time, the request the kiosk gave up on commits
    kept = transport.kept
    record = sandbox.terminal_record(terminal.username)
    assert kept is not None and record is not None
    late = sandbox.charge(record, kept.content, kept.headers["idempotency-key"])
    assert late.status == 201
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - 500
    assert result.charged is not False, result
