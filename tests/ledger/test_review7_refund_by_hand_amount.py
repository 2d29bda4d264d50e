"""Review 7 (fixed): a refund made by hand of a row no sale of this outbox owns was counted
in the shift's "refunds made" at 0 MNT. Now a landed refund by hand with no amount reads
its row's amount from the history (`reversals.price_from_history`, best effort within the
refund's deadline).

`refund_queue.refund_by_hand` records the refund's amount from `sales_sql.amount_of_tx`,
the amount of *our own* sale with that row, and None otherwise; nothing fills it in
later (a 204 has no body), and `shifts._figures_of` sums `amount_mnt or 0`. The rows an
owner refunds by hand at this kiosk are exactly those no sale of it holds: another
install's charge on these credentials (a second till whose customer asks here), or the
row a review offers before the review is decided (the owner refunds it by `qrpos reverse`
and then says "not charged"). The service lists the row REVERSED at its full amount, so
the shift's X, its frozen Z and `report --merge`'s per-cashier refunds understate the
money handed back (the books' own invariant, tests/ledger/test_shifts.py:
refunds made == the day's reversed amount, breaks).

All through the real `qrpos` commands against the sandbox over loopback HTTP.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from headless import fed, qrpos
from qrpos import spec
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox

AMOUNT = 6000
PIN = "135792468013"


def _json(env: dict[str, str], *args: str) -> dict[str, Any]:
    out = qrpos(env, *args)
    assert out.returncode == 0, out.stdout + out.stderr
    found: dict[str, Any] = json.loads(out.stdout)
    return found


async def test_a_refund_by_hand_of_another_tills_row_counts_its_amount(
    cli_env: dict[str, str], sandbox: Sandbox, other_till: TerminalClient
) -> None:
    env = cli_env
    assert fed(env, f"{PIN}\n", "cashier", "add", "Bat", "--pin-stdin").returncode == 0
    assert fed(env, f"{PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    # a second till on these credentials sells; its customer asks for the money back here
    stranger = sandbox.create_wallet(10_000)
    sold = await other_till.charge(stranger.qr_token, AMOUNT, str(uuid.uuid4()))
    assert isinstance(sold, Approved), sold
    tx_id = sold.transaction.id
    done = qrpos(env, "reverse", tx_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sandbox.transaction(tx_id).status is spec.TxStatus.REVERSED
    assert sandbox.wallet(stranger.wallet_id).balance_mnt == 10_000  # handed back in full
    day = _json(env, "report", "--json")
    assert day["reversed"] == {"count": 1, "amountMNT": AMOUNT}, day

    x = _json(env, "shift", "x", "--json")
    z_out = fed(env, f"{PIN}\n", "shift", "close", "--pin-stdin", "--json")
    assert z_out.returncode == 0, z_out.stdout + z_out.stderr
    z = json.loads(z_out.stdout)
    assert (x["refunds_made"], z["refunds_made"]) == (1, 1), (x, z)
    assert (x["refunds_made_mnt"], z["refunds_made_mnt"]) == (AMOUNT, AMOUNT), (x, z)


async def test_a_refund_by_hand_lands_when_the_history_cannot_price_it(
    cli_env: dict[str, str], sandbox: Sandbox, other_till: TerminalClient
) -> None:
    """The amount is bookkeeping after the money moved: a history that does not answer
    leaves it unknown and never holds up or fails the refund."""
    env = cli_env
    stranger = sandbox.create_wallet(10_000)
    sold = await other_till.charge(stranger.qr_token, AMOUNT, str(uuid.uuid4()))
    assert isinstance(sold, Approved), sold
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    done = qrpos(env, "reverse", sold.transaction.id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sandbox.wallet(stranger.wallet_id).balance_mnt == 10_000
    out = qrpos(env, "outbox", "list", "--all", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    [refund] = json.loads(out.stdout)
    assert (refund["state"], refund["amountMNT"]) == ("refunded", None), refund
