"""A clock measurement goes stale when the service's clock (or the Pi's, on an NTP step)
moves after it: the look-up must not miss the sale's own charge and say "not charged".

Found by the fault campaign (benchmarks/fault_campaign.py, scenario "clock"): the service's
clock moved 150 s behind after a sale had measured it, the next sale lost its reply, its
same-key retry got 409, and the look-up on the old offset ended `not_charged` while the
customer's wallet was charged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials


@pytest.mark.parametrize("jump_s", [-150.0, -600.0])
async def test_a_clock_jump_after_a_measurement_never_ends_in_a_false_not_charged(
    tmp_path: Path,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    jump_s: float,
) -> None:
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    measured = await desk.charge(100, sandbox.create_wallet(1_000).qr_token, deadline_s=5)
    assert measured.state is IntentState.APPROVED  # its Date measured the offset: 0
    sandbox.set_clock_offset(jump_s)
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("drop_after_commit", operation="charge")
    sandbox.arm_fault("forget_idempotency", count=3)
    result = await desk.charge(700, wallet.qr_token, deadline_s=10)
    charged = sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - 700
    assert charged, "the charge committed before its reply was lost"
    ledger.close()
    assert result.state is not IntentState.NOT_CHARGED, result
    assert result.charged is not False
