"""A service clock that ran ahead and stepped back stamps every commit at its high-water
mark until it has caught up, and that mark may have moved on after this kiosk last saw
the clock (another till kept selling). A sale whose reply and key are lost then must
still find its own row: never "not charged", never a review without it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, review_views
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport


@pytest.mark.parametrize("clean_sale_between", [True, False])
@pytest.mark.parametrize("ahead_s", [600.0, 150.0])
async def test_a_commit_at_a_mark_the_kiosk_never_saw_is_found(
    tmp_path: Path,
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    sim_app: Any,
    terminal: TerminalCredentials,
    ahead_s: float,
    clean_sale_between: bool,
) -> None:
    policy = RetryPolicy.testing(window_margin_s=1.0)
    desk = ChargeDesk(ledger, asgi_client, policy=policy)
    sandbox.set_clock_offset(ahead_s)
    assert (await desk.charge(100, sandbox.create_wallet(1_000).qr_token, deadline_s=5)).charged
    # another till on these credentials keeps selling at the clock ahead for a while
    other_client = TerminalClient(
        "http://127.0.0.1",
        terminal.username,
        terminal.password,
        transport=asgi_transport(sim_app),
    )
    other_ledger = Ledger.open(tmp_path / "other.sqlite3")
    other = ChargeDesk(other_ledger, other_client, policy=policy)
    until = time.monotonic() + 4.0
    while time.monotonic() < until:
        await other.charge(700, sandbox.create_wallet(1_000).qr_token, deadline_s=5)
        await asyncio.sleep(0.3)
    sandbox.set_clock_offset(0.0)  # NTP on the service steps it back
    if clean_sale_between:
        # a clean sale: the kiosk sees the clock back (stamped at the mark, as every commit)
        wallet = sandbox.create_wallet(1_000)
        assert (await desk.charge(200, wallet.qr_token, deadline_s=5)).charged
    # else the very next sale loses its reply: the kiosk last saw the clock ahead before
    # the other till's sales, and has not seen it since it stepped back
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("drop_after_commit", operation="charge")
    sandbox.arm_fault("forget_idempotency", count=5)
    result = await desk.charge(4_500, wallet.qr_token, deadline_s=5)
    [own] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    assert result.state is not IntentState.NOT_CHARGED, result.message
    if result.state is IntentState.NEEDS_REVIEW:
        [view] = [v for v in review_views(ledger) if int(v.intent.id) == result.intent_id]
        offered = {c.transaction.id for c in view.candidates}
        assert own.id in offered, (view.reason, len(offered), own.created_at)
    else:
        assert result.charged, result.state
    await other_client.aclose()
    other_ledger.close()
