"""Review of issue 41 (f41-manual-refund), defect B: an open sale (its reply lost) is proven
charged by the history on a row the owner is refunding by hand (`qrpos reverse tx_…`).

The reply check refuses a 201 on a row this kiosk refunds (`reply.refunded`), and a row
whose live refund is another sale's is contested (`refund_queue.refund_holder`), but a
refund by hand has no sale: the history's proof went through, and the sale ended
`charged_per_history`, sold, while its money went back to the customer (the gross
counts a charge that was refunded). Proven on a row a refund by hand holds
(`lookup_proven_refunded_row`), an open sale goes to a person (`reversed_row`, as it
does when the history already lists the row REVERSED), charged; it cannot be kept as
paid while the row is being refunded, and "refund the row" takes the refund by hand as
the sale's. An abandoned sale on such a row still takes that refund at once
(`test_abandon_proven_on_a_refunded_row.py`).

Interleaving (through the sandbox and the real ledger):
  1. sale B (4500 MNT) commits X; its reply and every retry is a 500, the history cannot
     be read: B is unresolved.
  2. the owner refunds X by hand (`qrpos reverse X`): 500s, it stays queued.
  3. the history answers (every charge send still a 500): it proves X is B's.
  Expected: B in review, X offered; since review 7 of issue 47 `unconfirmed_row`, charged
  unknown (only the window ties X to B), no longer `reversed_row`, charged.
  Found on main: B `charged_per_history`.

Faults are armed 10**6 times (a zero-delay testing policy spends a small count within a
deadline).
"""

from __future__ import annotations

import pytest
from test_refund_by_hand_on_a_sales_row import (  # the same unresolved sale, set up once
    AMOUNT,
    MANY,
    _desk,
    _reasons,
    _refunds_of,
    _sale,
    _unresolved_charge,
)

from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    MarkCharged,
    RefundRow,
    ReviewRefused,
)
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox


async def _open_sale_proven_on_a_pending_refund_by_hand(
    ledger: Ledger, desk: ChargeDesk, sandbox: Sandbox
) -> tuple[int, str, str]:
    """B open, X refunded by hand (500s: pending); the history answers again (every
    charge send still a 500). Returns (B, X, B's wallet); the reverse faults stay armed."""
    sale_id, tx_id, wallet_id = await _unresolved_charge(desk, sandbox)
    sandbox.arm_fault("error_before_commit", count=MANY, operation="reverse")
    by_hand = await desk.reverse(tx_id, deadline_s=1)
    assert by_hand.state == "unresolved", by_hand
    sandbox.clear_faults()
    sandbox.arm_fault("error_after_commit", count=MANY, operation="charge")
    sandbox.arm_fault("error_before_commit", count=MANY, operation="reverse")
    await desk.recover(deadline_s=8, patient=True)
    return sale_id, tx_id, wallet_id


async def test_an_open_sale_proven_on_a_row_refunded_by_hand_is_not_sold(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox
) -> None:
    """The history proves X is B's while the owner's refund of X is queued: B is not
    `charged_per_history` (its money is going back); a person is asked, X offered."""
    desk = _desk(ledger, asgi_client)
    sale_id, tx_id, _ = await _open_sale_proven_on_a_pending_refund_by_hand(ledger, desk, sandbox)
    state, charged = _sale(desk, sale_id)
    assert state is not IntentState.CHARGED_PER_HISTORY, (
        f"sale #{sale_id} is sold on {tx_id}, which is being refunded by hand"
    )
    # the window alone ties X to B (B's key cannot confirm it: every send a 500): X may be
    # another install's, so charged stays unknown and a person decides with X offered
    # (review 7: the match rule goes before the refund by hand; before it, B was written
    # charged, `reversed_row`, which on a stranger's row was money shown wrongly)
    assert (state, charged) == (IntentState.NEEDS_REVIEW, None)
    [review] = [v for v in desk.listing.reviews() if v.intent.id == str(sale_id)]
    assert review.reason == "unconfirmed_row", review
    assert [c.transaction.id for c in review.candidates] == [tx_id]


async def test_the_owner_closes_it_by_refunding_the_row_which_takes_the_refund_by_hand(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox
) -> None:
    """The review cannot keep X as paid while X is being refunded; "refund X" takes the
    refund by hand as the sale's, and the sale ends refunded when it lands (once)."""
    desk = _desk(ledger, asgi_client)
    sale_id, tx_id, wallet_id = await _open_sale_proven_on_a_pending_refund_by_hand(
        ledger, desk, sandbox
    )
    assert _sale(desk, sale_id)[0] is IntentState.NEEDS_REVIEW
    with pytest.raises(ReviewRefused, match="being refunded"):
        await desk.settle_review(sale_id, MarkCharged(tx_id), deadline_s=1)
    await desk.settle_review(sale_id, RefundRow(tx_id), deadline_s=1)
    sandbox.clear_faults()
    await desk.recover(deadline_s=10, patient=True)
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000
    assert _refunds_of(ledger, tx_id) == [(sale_id, "refunded", AMOUNT)]
    assert _sale(desk, sale_id) == (IntentState.REFUNDED_PER_REVIEW, True)


async def test_an_open_sale_whose_row_was_refunded_by_hand_goes_to_a_person(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox
) -> None:
    """The refund by hand landed before the history answered (the row is listed
    REVERSED): the same review, never a sale sold on a refunded row."""
    desk = _desk(ledger, asgi_client)
    sale_id, tx_id, wallet_id = await _unresolved_charge(desk, sandbox)
    sandbox.clear_faults()
    assert (await desk.reverse(tx_id, deadline_s=5)).state == "refunded"
    sandbox.arm_fault("error_after_commit", count=MANY, operation="charge")
    await desk.recover(deadline_s=8, patient=True)
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000
    assert _sale(desk, sale_id)[0] is IntentState.NEEDS_REVIEW
    assert _reasons(desk, sale_id) == ["reversed_row"]
