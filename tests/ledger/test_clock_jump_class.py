"""The class behind the campaign's false "not charged": a clock jump around a lost reply,
and a `409` to the same key's retry.

A jump of the service clock (or a step of the Pi's) of 150 s to 15 min, in both directions,
measured by an earlier sale before the jump or by the committing attempt itself: the sale's
window must span every offset measured around its own requests, and a 409 to a same-key
retry after an unclear attempt is never "not charged" (or "token used") without proof.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app
from qrpos.simulator.testing import asgi_transport

JUMPS_S = [-900.0, -600.0, -150.0, 150.0, 600.0, 900.0]


class JumpAfterFirstCharge(httpx.AsyncBaseTransport):
    """The real app; the service clock jumps right after the first charge response."""

    def __init__(self, sandbox: Sandbox, jump_s: float) -> None:
        self.inner = asgi_transport(create_app(sandbox))
        self.sandbox, self.jump_s, self.armed = sandbox, jump_s, False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        charge = request.method == "POST" and request.url.path.endswith("charge-by-token")
        try:
            return await self.inner.handle_async_request(request)
        finally:
            if charge and self.armed:
                self.armed = False
                self.sandbox.set_clock_offset(self.jump_s)


@pytest.mark.parametrize("measured", ["before", "at_the_attempt"])
@pytest.mark.parametrize("jump_s", JUMPS_S)
async def test_a_jump_around_a_lost_reply_and_a_409_never_says_not_charged(
    tmp_path: Path, jump_s: float, measured: str
) -> None:
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    term = sandbox.create_terminal("m_demo")
    transport = JumpAfterFirstCharge(sandbox, jump_s)
    client = TerminalClient("http://127.0.0.1", term.username, term.password, transport=transport)
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    try:
        desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing())
        earlier = await desk.charge(100, sandbox.create_wallet(1_000).qr_token, deadline_s=5)
        assert earlier.state is IntentState.APPROVED  # its Date measured offset 0
        wallet = sandbox.create_wallet(10_000)
        if measured == "before":
            # the kiosk measured before the jump; the committing attempt's reply is lost
            sandbox.set_clock_offset(jump_s)
            sandbox.arm_fault("drop_after_commit", operation="charge")
        else:
            # the committing attempt's 500 measures the old clock; the jump follows it
            transport.armed = True
            sandbox.arm_fault("error_after_commit", operation="charge")
        sandbox.arm_fault("forget_idempotency", count=3)  # the same-key retry hears 409
        result = await desk.charge(700, wallet.qr_token, deadline_s=10)
    finally:
        ledger.close()
        await client.aclose()
    ours = [
        tx.id
        for tx in sandbox.transactions()
        if tx.username == term.username and tx.amount_mnt == 700
    ]
    assert len(ours) == 1, "the charge committed before its reply was lost"
    assert result.state not in (IntentState.NOT_CHARGED, IntentState.TOKEN_USED), result
    assert result.charged is not False
    if result.charged:
        assert result.transaction is not None and result.transaction.id == ours[0]
    else:
        assert result.state is IntentState.NEEDS_REVIEW
