"""Refund admission: may a refund of a row be queued now, and which refund answers it.

One refund per row, of the whole row: asked by `refund_queue.refund_for_sale` (a sale's
refund: an abandoned sale proven charged, a person's "refund this row") and by
`refund_queue.refund_by_hand` (`qrpos reverse`) alike. Pure: no sqlite3, httpx or clock.
"""

from __future__ import annotations

from enum import StrEnum

from qrpos.ledger.states import ReversalState


class Admission(StrEnum):
    """What a new refund of a row does with the refunds of that row the outbox already
    has (`refund_admission`)."""

    #: none moved or may move money (none, or only refused ones): queue a new refund
    QUEUE = "queue"
    #: a live one that belongs to no sale (made by hand): it becomes this sale's, so its
    #: answer reaches the sale (a second reversal would get a 409 and prove nothing)
    TAKE_OVER = "take_over"
    #: a live one that is already this refund's: it is the one, as it stands
    SAME = "same"
    #: a live one of another sale: the row is that sale's
    OTHER_SALE = "other_sale"


def refund_admission(
    existing: ReversalState | None, existing_sale: int | None, sale: int | None
) -> Admission:
    """May a refund of a row be queued now, for `sale` (None: a refund by hand, `qrpos
    reverse`): one refund per row, of the whole row. `existing` is the state of the row's
    latest refund (None: none), `existing_sale` the sale it answers. A refused refund moved
    no money and holds nothing; any other (pending, kept for re-pairing, refunded) is the
    row's one. A refund by hand asks for the row's live refund, whoever's it is. Pure: the
    desk's reverse queue and `refund_queue.refund_for_sale` both ask here."""
    if existing is None or existing is ReversalState.REFUSED:
        return Admission.QUEUE
    if sale is None or existing_sale == sale:
        return Admission.SAME
    if existing_sale is None:
        return Admission.TAKE_OVER
    return Admission.OTHER_SALE
