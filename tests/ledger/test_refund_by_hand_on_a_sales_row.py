"""Review of issue 41 (f41-manual-refund), defect A: the owner settles a sale's review by
choosing "refund" on a row already being refunded by hand (`qrpos reverse tx_…`, the
owner's reverse screen), the class `refund_queue.refund_for_sale` closed for the abandoned
sale.

`reviews.decide` took that refund as the sale's (`reversal_id = live.id`) but never
attached the sale to it (`intent_id` stayed None), so `refund_queue.answer_sale` told
nobody how it ended. Refused, the sale stayed `refunded_per_review`, charged, its review
closed: the customer's money held and nobody asked (issue 41's defect 1 through a third
door). Landed, the money was right but the refund was nobody's.

Interleaving (through the sandbox and the real ledger):
  1. sale B (4500 MNT) commits X; its reply and every retry is a 500, the history cannot
     be read; the cashier abandons B.
  2. the history answers: X lies in B's window, which alone ties it to B (issue 47:
     another install's row would look the same), so B is in review (`unconfirmed_row`, X
     offered); nothing is refunded on the window's word. Either the owner decides on that
     review, or first refunds X from it, the service refuses (403) and B is back in review
     (`refund_refused`): the shape issue 41's story had.
  3. the owner refunds X by hand (`qrpos reverse X`): 500s, it stays queued.
  4. the owner settles B's review: "refund X". The queued refund by hand is taken.
  5. the service answers that refund 403 (or 204).
  Expected: B back in review (`refund_refused`), or B `refunded_per_review` on its refund.
  Found on main: B `refunded_per_review`, charged, no review; the refund's sale is None.

Faults are armed 10**6 times (a zero-delay testing policy spends a small count within a
deadline).
"""

from __future__ import annotations

import pytest

from qrpos import spec
from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    RefundRow,
    RetryPolicy,
    refunds_sql,
)
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox

AMOUNT = 4500
MANY = 10**6
#: the review B is in when the owner decides: the window's pairing (issue 47), or the
#: refund the owner chose on it refused by the service (issue 41's shape)
FIRST_REVIEWS = pytest.mark.parametrize("first", ["unconfirmed_row", "refund_refused"])


def _desk(ledger: Ledger, client: TerminalClient) -> ChargeDesk:
    return ChargeDesk(
        ledger, client, policy=RetryPolicy.testing(resend_horizon_s=1.0), jitter=lambda: 1.0
    )


async def _unresolved_charge(desk: ChargeDesk, sandbox: Sandbox) -> tuple[int, str, str]:
    """Sale B committed X, its replies all lost and the history unreadable: B is open
    (unresolved). Returns (B's id, X, B's wallet); the charge and list faults stay armed."""
    warm = await desk.charge(100, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    assert warm.charged  # the terminal id and the service's clock are known
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=MANY, operation="charge")
    sandbox.arm_fault("error_before_commit", count=MANY, operation="list")
    sale = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=2)
    assert sale.state is IntentState.UNRESOLVED, sale
    [charge] = [
        tx
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet.wallet_id and tx.type is spec.TxType.CHARGE
    ]
    return sale.intent_id, charge.id, wallet.wallet_id


async def _review_of_the_window(desk: ChargeDesk, sandbox: Sandbox) -> tuple[int, str, str]:
    """B abandoned; the history answers and its window pairs X with B: B is in review
    (`unconfirmed_row`, X offered), nothing refunded. Faults are cleared."""
    sale_id, tx_id, wallet_id = await _unresolved_charge(desk, sandbox)
    assert (await desk.abandon(sale_id)).state is IntentState.ABANDONED
    sandbox.clear_faults()
    await desk.recover(deadline_s=10, patient=True)
    [review] = [v for v in desk.listing.reviews() if v.intent.id == str(sale_id)]
    assert review.reason == "unconfirmed_row", review
    assert tx_id in [c.transaction.id for c in review.candidates], review
    assert _sale(desk, sale_id) == (IntentState.NEEDS_REVIEW, None)
    # never refunded on the window's word: the customer is still charged, no refund queued
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000 - AMOUNT
    assert sandbox.transaction(tx_id).status is spec.TxStatus.COMPLETED
    return sale_id, tx_id, wallet_id


async def _review_before_the_refund_by_hand(
    desk: ChargeDesk, sandbox: Sandbox, first: str
) -> tuple[int, str, str]:
    """B in review, X offered: `unconfirmed_row` as the window left it, or, for
    "refund_refused", after the owner refunded X from it and the service refused (403):
    B charged (proven now), back in review (`refund_refused`). Faults are cleared."""
    sale_id, tx_id, wallet_id = await _review_of_the_window(desk, sandbox)
    if first == "refund_refused":
        sandbox.arm_fault("forbidden", count=MANY, operation="reverse")
        await desk.settle_review(sale_id, RefundRow(tx_id), deadline_s=5)
        sandbox.clear_faults()
        [review] = [v for v in desk.listing.reviews() if v.intent.id == str(sale_id)]
        assert review.reason == "refund_refused", review
        assert tx_id in [c.transaction.id for c in review.candidates], review
        assert _sale(desk, sale_id) == (IntentState.NEEDS_REVIEW, True)
        assert sandbox.wallet(wallet_id).balance_mnt == 10_000 - AMOUNT
    return sale_id, tx_id, wallet_id


def _refused_before(first: str, sale_id: int) -> list[tuple[int | None, str, int | None]]:
    """The refunds of X the service refused before the refund by hand: the owner's first."""
    return [(sale_id, "refused", AMOUNT)] if first == "refund_refused" else []


def _sale(desk: ChargeDesk, intent_id: int) -> tuple[IntentState, bool | None]:
    view = next(
        r
        for r in desk.listing.intents(include_final=True)
        if r.kind == "charge" and r.id == str(intent_id)
    )
    return IntentState(view.state), view.charged


def _refunds_of(ledger: Ledger, tx_id: str) -> list[tuple[int | None, str, int | None]]:
    rows = ledger.read(lambda c: refunds_sql.list_reversals(c, include_final=True))
    return [(r.intent_id, str(r.state), r.amount_mnt) for r in rows if r.tx_id == tx_id]


def _reasons(desk: ChargeDesk, intent_id: int) -> list[str]:
    return [str(v.reason) for v in desk.listing.reviews() if v.intent.id == str(intent_id)]


async def _decided_refund_on_a_pending_refund_by_hand(
    ledger: Ledger, desk: ChargeDesk, sandbox: Sandbox, first: str
) -> tuple[int, str, str]:
    """B in review (`first`); the owner refunds X by hand (500s: pending), then settles
    B's review with "refund X". Returns (B, X, B's wallet); faults cleared."""
    sale_id, tx_id, wallet_id = await _review_before_the_refund_by_hand(desk, sandbox, first)
    sandbox.arm_fault("error_before_commit", count=MANY, operation="reverse")
    by_hand = await desk.reverse(tx_id, deadline_s=1)
    assert by_hand.state == "unresolved", by_hand
    await desk.settle_review(sale_id, RefundRow(tx_id), deadline_s=1)
    assert _sale(desk, sale_id)[0] is IntentState.REFUNDED_PER_REVIEW
    # one refund in flight for X (the refused one is history): never a second
    pending = [r for r in _refunds_of(ledger, tx_id) if r[1] == "pending"]
    assert len(pending) == 1, _refunds_of(ledger, tx_id)
    sandbox.clear_faults()
    return sale_id, tx_id, wallet_id


@FIRST_REVIEWS
async def test_a_review_refunded_on_a_row_refunded_by_hand_hears_that_refund_refused(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, first: str
) -> None:
    """The refund by hand the person's decision took is refused: the customer is still
    charged, so the sale goes back to a person (`refund_refused`), never silence."""
    desk = _desk(ledger, asgi_client)
    sale_id, tx_id, wallet_id = await _decided_refund_on_a_pending_refund_by_hand(
        ledger, desk, sandbox, first
    )
    sandbox.arm_fault("forbidden", count=MANY, operation="reverse")
    await desk.recover(deadline_s=10, patient=True)
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000 - AMOUNT  # still charged
    state, charged = _sale(desk, sale_id)
    assert (state, charged) == (IntentState.NEEDS_REVIEW, True), (
        f"sale #{sale_id} is {state}, charged={charged}: its refund was refused and nobody is asked"
    )
    assert _reasons(desk, sale_id) == ["refund_refused"]
    assert _refunds_of(ledger, tx_id) == [
        *_refused_before(first, sale_id),
        (sale_id, "refused", AMOUNT),
    ]


@FIRST_REVIEWS
async def test_a_review_refunded_on_a_row_refunded_by_hand_ends_on_that_refund(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, first: str
) -> None:
    """The refund by hand lands: the customer has the money back once, and the refund is
    the sale's (its row, its full amount)."""
    desk = _desk(ledger, asgi_client)
    sale_id, tx_id, wallet_id = await _decided_refund_on_a_pending_refund_by_hand(
        ledger, desk, sandbox, first
    )
    await desk.recover(deadline_s=10, patient=True)
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000
    assert _refunds_of(ledger, tx_id) == [
        *_refused_before(first, sale_id),
        (sale_id, "refunded", AMOUNT),
    ]
    assert _sale(desk, sale_id) == (IntentState.REFUNDED_PER_REVIEW, True)


@FIRST_REVIEWS
async def test_a_review_refunded_on_a_row_already_refunded_by_hand_takes_that_refund(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, first: str
) -> None:
    """The refund by hand had landed before the person decided: no second refund, the
    landed one is the sale's, and the sale ends refunded."""
    desk = _desk(ledger, asgi_client)
    sale_id, tx_id, wallet_id = await _review_before_the_refund_by_hand(desk, sandbox, first)
    assert (await desk.reverse(tx_id, deadline_s=5)).state == "refunded"
    await desk.settle_review(sale_id, RefundRow(tx_id), deadline_s=5)
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000
    assert _refunds_of(ledger, tx_id) == [
        *_refused_before(first, sale_id),
        (sale_id, "refunded", AMOUNT),
    ]
    assert _sale(desk, sale_id) == (IntentState.REFUNDED_PER_REVIEW, True)
