"""The refund queue's rules on one connection: one refund per row, and the one place a
refund's end reaches its sale.

A sale's refund is queued (or a refund made by hand taken over) inside the commit that
decides it, by whoever decides it (a look-up that proves an abandoned sale, a person's
review): `refund_for_sale`; the owner's own refund of a row, `refund_by_hand`. A refund of
a sale tells the sale how it ended (`answer_sale`, the one place): refused, the sale goes
to a person (`refund_refused`). What a look-up cannot see in the rows is read here too: a
row another sale's refund holds (`refund_holder`), one a refund made by hand holds
(`held_by_hand`).

A storage-floor module (docs/ledger.md, "The ledger's floors"): it takes a connection and
applies the table's moves (`qrpos.ledger.moves`) through the SQL of `refunds_sql`,
`reviews_sql` and `sales_sql`; the drivers (`reversals`, `lookup`, `reviews`) and the desk
call it, so none of them imports another.
"""

from __future__ import annotations

from qrpos.ledger import refunds_sql, reviews_sql, sales_sql
from qrpos.ledger.admission import Admission, refund_admission
from qrpos.ledger.claims import Candidate, Disputed, Proven, candidates_json
from qrpos.ledger.events import Charged, Effect, Refusal, SaleEvent
from qrpos.ledger.moves import charged_value, proven_event, refund_event, sale_cell
from qrpos.ledger.states import (
    IntentChanges,
    IntentRow,
    IntentState,
    RefundReason,
    ReversalRow,
    ReversalState,
)
from qrpos.ledger.typed_rows import Connection
from qrpos.said import say
from qrpos.service.models import transaction_from_json_text


def refund_for_sale(
    conn: Connection,
    *,
    tx_id: str,
    sale: IntentRow,
    reason: RefundReason,
    now: float,
    amount_mnt: int | None = None,
) -> tuple[ReversalRow, IntentChanges]:
    """The refund of row `tx_id` that answers `sale` (one refund per row: the table's
    `admission.refund_admission`), and the sale's changes if that refund has already ended
    (`answer_sale`; `sale` is the sale as its move left it).

    A refund made by hand (no sale's) that moved or may move money becomes this sale's; a
    refused one moved no money, and a new refund is queued. A live refund of another sale
    is returned as it is, answering nothing here (`lookup` never proves a sale on such a
    row: it is contested; `reviews.decide` refuses it). A refund is always of the whole
    row: `amount_mnt` is the row's (the sale's when not given: a proof matched the two, or
    a person named the row), recorded when the refund has none yet.
    """
    amount = sale.amount_mnt if amount_mnt is None else amount_mnt
    existing = refunds_sql.reversal_for_tx(conn, tx_id)
    admitted = refund_admission(
        None if existing is None else existing.state,
        None if existing is None else existing.intent_id,
        sale.id,
    )
    if admitted is Admission.QUEUE:
        rid = refunds_sql.insert_reversal(
            conn, tx_id=tx_id, reason=reason, now=now, intent_id=sale.id, amount_mnt=amount
        )
        refund = refunds_sql.get_reversal(conn, rid)
        assert refund is not None
    else:
        assert existing is not None
        refund = existing
        if admitted is Admission.TAKE_OVER:
            refund = refunds_sql.attach_sale(conn, existing.id, sale.id, amount)
    return refund, answer_sale(conn, sale, refund, now)


def refund_by_hand(conn: Connection, *, tx_id: str, now: float) -> ReversalRow:
    """The refund of row `tx_id` an owner asks for (`qrpos reverse`): the row's live refund
    whoever's it is, or a new one that answers no sale (`admission.refund_admission`)."""
    existing = refunds_sql.reversal_for_tx(conn, tx_id)
    admitted = refund_admission(
        None if existing is None else existing.state,
        None if existing is None else existing.intent_id,
        None,
    )
    if admitted is not Admission.QUEUE:
        assert existing is not None
        return existing
    rid = refunds_sql.insert_reversal(
        conn,
        tx_id=tx_id,
        reason=RefundReason.MANUAL,
        now=now,
        amount_mnt=sales_sql.amount_of_tx(conn, tx_id),
    )
    refund = refunds_sql.get_reversal(conn, rid)
    assert refund is not None
    return refund


def refund_holder(conn: Connection, tx_id: str, *, besides: int) -> int | None:
    """The sale, other than `besides`, whose refund of row `tx_id` moved or may move money
    (one refund per row: the row is that sale's), or None. A refund by hand has no sale,
    and a refused one holds nothing."""
    refund = refunds_sql.reversal_for_tx(conn, tx_id)
    if refund is None or refund.state is ReversalState.REFUSED or refund.intent_id == besides:
        return None
    return refund.intent_id


def held_by_hand(
    conn: Connection, sale: IntentRow, proven: Proven, event: SaleEvent
) -> tuple[Proven | Disputed, SaleEvent]:
    """A look-up's proof of `sale` on a row that a refund made by hand holds (no sale's;
    queued, kept or landed; a refused one moved nothing) is its own event
    (`moves.proven_event`); when the table sends that to a person, the review offers the
    row. (A live refund of another sale made the row contested before: `refund_holder`.)"""
    refund = refunds_sql.reversal_for_tx(conn, proven.transaction.id)
    by_hand = (
        refund is not None
        and refund.intent_id is None
        and refund.state is not ReversalState.REFUSED
    )
    event = proven_event(event, refunded_by_hand=by_hand)
    cell = sale_cell(sale.state, event)
    if isinstance(cell, Refusal) or cell.review is None:
        return proven, event
    return Disputed(cell.review, (Candidate(proven.transaction, ()),)), event


def answer_sale(
    conn: Connection, sale: IntentRow, refund: ReversalRow, now: float
) -> IntentChanges:
    """The one place a refund's answer (refunded, refused, already reversed: the refund's
    end) reaches its sale: the sale's changes, none when the refund is another sale's or
    none's, has not ended, or the sale's table moves nothing."""
    if refund.intent_id != sale.id:
        return {}
    return _answer_changes(conn, sale, refund, now)


def _answer_changes(
    conn: Connection, sale: IntentRow, refund: ReversalRow, now: float
) -> IntentChanges:
    """The sale's changes now that the refund of its row ended, as the sale's table answers
    (an abandoned sale is reversed, or, its refund refused, goes to a person: the customer
    was charged, and silence would keep the money); none when the table moves nothing. A
    review this opens is written here."""
    if refund.state not in (ReversalState.REFUNDED, ReversalState.REFUSED):
        return {}
    event = refund_event(refunded=refund.state is ReversalState.REFUNDED)
    cell = sale_cell(sale.state, event)
    if isinstance(cell, Refusal) or cell.next is sale.state:
        return {}  # a refund this sale does not wait for (a late answer)
    changes: IntentChanges = {"state": IntentState(cell.next), "resolved_at": now}
    if Effect.STOP_WATCHING in cell.effects:
        changes["watching"] = 0
    if cell.charged is not Charged.KEEP:
        changes["charged"] = charged_value(cell, sale.charged)
    if Effect.OPEN_REVIEW in cell.effects and cell.review is not None:
        rows = []
        if sale.tx_json:
            rows = [Candidate(transaction_from_json_text(sale.tx_json), ())]
        reviews_sql.upsert_review(conn, sale.id, cell.review, candidates_json(rows), now)
        changes["last_detail"] = say(
            "sale.refund_refused",
            "charged as {id}; the refund was refused ({message}): a person must decide",
            id=refund.tx_id,
            message=refund.message or f"HTTP {refund.last_status}",
        )
    else:
        changes["last_detail"] = say(
            "sale.refunded_after_abandon",
            "charged as {id} after abandon; refunded",
            id=refund.tx_id,
        )
    return changes
