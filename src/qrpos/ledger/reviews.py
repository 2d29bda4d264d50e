"""Reviews (sales a person must decide) and the record of another install's activity.

A review is opened by a move of the table (`Effect.OPEN_REVIEW`, `qrpos.ledger.moves`):
when there is no proof either way (`qrpos.ledger.claims`), a reply that does not fit, a
sale of another pairing, or a refund of a sale proven charged that the service refused
(`refund_queue.answer_sale`); it keeps the rows that could be the sale's charge. A person
decides it with one `ReviewDecision` (through the table too: `decision_event`); the
decision is checked against those rows and written to the audit trail with who took it
and when.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from qrpos import spec
from qrpos.errors import QrposError
from qrpos.ledger import refunds_sql, reviews_sql, sales_sql, service_sql
from qrpos.ledger.admission import Admission, refund_admission
from qrpos.ledger.events import Effect, Refusal, ReviewReason, SaleEvent
from qrpos.ledger.moves import charged_value, sale_cell
from qrpos.ledger.refund_queue import refund_for_sale

# `open_reviews` and `ReviewView` are read here too, as they were before they moved down
from qrpos.ledger.review_reads import ReviewView as ReviewView
from qrpos.ledger.review_reads import open_reviews as open_reviews
from qrpos.ledger.review_reads import sale_review
from qrpos.ledger.states import IntentChanges, IntentRow, IntentState, RefundReason, ReversalState
from qrpos.ledger.store import Ledger
from qrpos.ledger.typed_rows import Connection
from qrpos.redact import escape_text
from qrpos.said import Said, say
from qrpos.service import ListingFailed, TerminalClient, Transaction

#: the reviews a person may settle on a row the kiosk did not offer (typed from the
#: service's dashboard): every one whose rows may not hold the truth. A refused refund's
#: review is of the sale's own proven row.
NAMED_ROW_REASONS: frozenset[str] = frozenset(ReviewReason) - {ReviewReason.REFUND_REFUSED}
#: how far before a sale a row a person names for its review is looked for in the history
NAMED_ROW_LOOKBACK = timedelta(days=1)


@dataclass(frozen=True)
class MarkCharged:
    """This row is this sale: the customer paid."""

    tx_id: str


@dataclass(frozen=True)
class RefundRow:
    """This row was charged wrongly: refund it through the reversal queue."""

    tx_id: str


@dataclass(frozen=True)
class MarkNotCharged:
    """Nothing was charged for this sale."""


ReviewDecision = MarkCharged | RefundRow | MarkNotCharged
#: the decision classes, for isinstance checks
DECISIONS = (MarkCharged, RefundRow, MarkNotCharged)


class ReviewRefused(QrposError):
    """A decision the review cannot take; the message says why (nothing was changed)."""


# --- reviews ----------------------------------------------------------------------------


def _describe(decision: ReviewDecision) -> Said:
    if isinstance(decision, MarkCharged):
        return say("review.charged_as", "charged as {id}", id=decision.tx_id)
    if isinstance(decision, RefundRow):
        return say("review.refund", "refund {id}", id=decision.tx_id)
    return say("review.not_charged", "not charged")


def _refused_not_offered(view: ReviewView, tx_id: str, offered: str) -> ReviewRefused:
    return ReviewRefused(
        say(
            "error.review_not_offered",
            "{tx} is not among the rows of sale #{intent} (rows: {offered})",
            tx=tx_id[:40],
            intent=view.intent.id,
            offered=offered,
        )
    )


def _named_row(
    conn: Connection, view: ReviewView, tx_id: str, seen: Transaction | None, checkable: bool
) -> Transaction | None:
    """A row a person named that the review did not offer (read from the service's
    dashboard): its form, and that no other sale of this outbox owns it or holds it in
    an open review; the row as this terminal's history shows it when the kiosk can read
    that history (`seen`, None when it is not there), or None when it cannot (the sale
    went out under another pairing): the person's word, unchecked."""
    if not spec.TX_ID_RE.match(tx_id):
        raise ReviewRefused(
            say(
                "error.review_not_a_tx",
                "{tx} is not a transaction id (tx_ followed by letters and digits)",
                tx=escape_text(tx_id[:40]),
            )
        )
    sale = int(view.intent.id)
    for other, rows in reviews_sql.offered_rows(conn).items():
        if other != sale and tx_id in rows:
            raise ReviewRefused(
                say(
                    "error.review_held",
                    "{tx} is offered to the review of sale #{intent}: settle that one first",
                    tx=tx_id,
                    intent=other,
                )
            )
    if not checkable:
        return None
    if seen is None or seen.id != tx_id:
        raise ReviewRefused(
            say(
                "error.review_not_in_history",
                "{tx} is not in this terminal's history since sale #{intent}",
                tx=tx_id,
                intent=sale,
            )
        )
    if seen.type is not spec.TxType.CHARGE:
        raise ReviewRefused(say("error.review_not_a_charge", "{tx} is not a charge", tx=tx_id))
    return seen


def _checked_candidate(
    conn: Connection,
    view: ReviewView,
    decision: MarkCharged | RefundRow,
    seen: Transaction | None,
    checkable: bool,
) -> Transaction | None:
    """The row the decision names: one the review offered, or one the person named
    (`_named_row`; None when the kiosk could not check it)."""
    tx_id = decision.tx_id
    by_id = {c.transaction.id: c.transaction for c in view.candidates}
    tx: Transaction | None
    own = sales_sql.get_intent(conn, int(view.intent.id))
    if tx_id in by_id:
        tx = by_id[tx_id]
    elif view.reason in NAMED_ROW_REASONS:
        tx = _named_row(conn, view, tx_id, seen, checkable)
    elif own is not None and own.tx_id is not None and own.tx_json is None:
        # the refused refund was of the sale's own row, recorded on a person's word when
        # the sale went out under another pairing (its history unreadable here): the row
        # offered is that word, and it stays unchecked (the till simulator, seed 41: the
        # review had no row, and "not charged" is refused for a proven charge). The word
        # may be the mistake (a typo the service answered 404): the person may name the
        # row again, as the review that took the word allowed (review 3 of issue 47)
        tx = None if own.tx_id == tx_id else _named_row(conn, view, tx_id, seen, checkable)
    else:
        raise _refused_not_offered(view, tx_id, ", ".join(by_id) or "none")
    holder = reviews_sql.holder_of(conn, tx_id, besides=int(view.intent.id))
    if holder is not None:
        raise ReviewRefused(
            say(
                "error.review_owned",
                "{tx} already belongs to sale #{intent}",
                tx=tx_id,
                intent=holder,
            )
        )
    if tx is not None and tx_id not in by_id and tx.amount_mnt != view.intent.amount_mnt:
        raise ReviewRefused(
            say(
                "error.review_amount",
                "{tx} is of {amount_tx}; sale #{intent} is of {amount_sale}",
                tx=tx_id,
                amount_tx=tx.amount_mnt,
                intent=view.intent.id,
                amount_sale=view.intent.amount_mnt or 0,
            )
        )
    return tx


def decision_event(decision: ReviewDecision, proven_charged: bool) -> SaleEvent:
    """The sale's event for a person's decision (`proven_charged`: the sale's own charge
    is proven, as when its refund was refused: "not charged" would be untrue)."""
    if isinstance(decision, MarkCharged):
        return SaleEvent.DECIDE_CHARGED
    if isinstance(decision, RefundRow):
        return SaleEvent.DECIDE_REFUND
    if proven_charged:
        return SaleEvent.DECIDE_NOT_CHARGED_WHEN_PROVEN
    return SaleEvent.DECIDE_NOT_CHARGED


def decide(
    conn: Connection,
    intent_id: int,
    decision: ReviewDecision,
    actor: str,
    now: float,
    *,
    seen: Transaction | None = None,
    checkable: bool = True,
) -> tuple[IntentRow, int | None]:
    """Apply a person's decision; returns the intent and the queued reversal's id (if any).

    A row the review did not offer may be named (`NAMED_ROW_REASONS`): `seen` is that row
    as the sale's terminal's history shows it (None: not there), or, when the kiosk cannot
    read that history (`checkable` false: another pairing's), the person's word is
    recorded unchecked, and the sale's words and the audit trail say so.

    Raises `ReviewRefused` for a sale not in review, a row that is not among its
    candidates (nor may be named), one another sale owns or holds in its review, one
    refunded (or being refunded) by the queue, or "not charged" for a sale whose charge is
    proven. The table of moves chooses the state (`qrpos.ledger.moves`). Runs inside one
    write transaction.
    """
    row = sales_sql.get_intent(conn, intent_id)
    if row is None:
        raise ReviewRefused(say("error.no_sale", "no sale #{intent}", intent=intent_id))
    cell = sale_cell(row.state, decision_event(decision, proven_charged=row.charged == 1))
    if isinstance(cell, Refusal):
        if row.state is IntentState.NEEDS_REVIEW:
            raise ReviewRefused(
                say(
                    "error.review_proven",
                    "sale #{intent} is proven charged: keep it as paid or refund it",
                    intent=intent_id,
                )
            )
        raise ReviewRefused(
            say(
                "error.not_in_review",
                "sale #{intent} is {state}, not waiting for a review",
                intent=intent_id,
                state=str(row.state),
            )
        )
    view = sale_review(conn, row)
    what = _describe(decision)
    reversal_id: int | None = None
    answered: IntentChanges = {}
    state, charged = IntentState(cell.next), charged_value(cell, row.charged)
    if isinstance(decision, MarkNotCharged):
        row = sales_sql.update_intent(
            conn,
            intent_id,
            state=state,
            charged=charged,
            proof="review",
            token=None,
            resolved_at=now,
            last_detail=say(
                "sale.decided_not_charged",
                "a person decided: not charged ({actor})",
                actor=actor,
            ),
        )
    else:
        tx = _checked_candidate(conn, view, decision, seen, checkable)
        tx_id = decision.tx_id
        if tx is None:  # the person's word: the kiosk cannot read that terminal's history
            what = say(
                "review.unchecked",
                "{what}; the kiosk could not check it (another terminal's history): not checked",
                what=what,
            )
        existing = refunds_sql.reversal_for_tx(conn, tx_id)
        # a refund the service refused moved no money: it blocks neither choice
        live = existing if existing is None or existing.state is not ReversalState.REFUSED else None
        if Effect.REFUND in cell.effects:
            admitted = (
                None if live is None else refund_admission(live.state, live.intent_id, intent_id)
            )
            if live is not None and live.intent_id is not None and admitted is Admission.OTHER_SALE:
                raise ReviewRefused(
                    say(
                        "error.review_owned",
                        "{tx} already belongs to sale #{intent}",
                        tx=tx_id,
                        intent=live.intent_id,
                    )
                )
            # one refund per row, of the whole row: one made by hand (queued or landed)
            # becomes this sale's, so its answer reaches the sale (`refund_for_sale`)
            refund, answered = refund_for_sale(
                conn,
                tx_id=tx_id,
                sale=dataclasses.replace(row, state=state, charged=charged),
                reason=RefundReason.REVIEW,
                now=now,
                amount_mnt=None if tx is None else tx.amount_mnt,
            )
            reversal_id = refund.id
        elif live is not None:
            raise ReviewRefused(
                say(
                    "error.review_refunding",
                    "{tx} is being refunded; it cannot be this sale's payment",
                    tx=tx_id,
                )
            )
        elif tx is not None and tx.status is spec.TxStatus.REVERSED:
            # reversed elsewhere (the dashboard, another till): the money went back, so it
            # is no payment to keep; refunding the row closes the sale (review 7)
            raise ReviewRefused(
                say(
                    "error.review_reversed",
                    "{tx} is reversed on the service; it cannot be this sale's payment: "
                    "refund it to close the sale",
                    tx=tx_id,
                )
            )
        row = sales_sql.update_intent(
            conn,
            intent_id,
            state=state,
            charged=charged,
            proof="review",
            tx_id=tx_id,
            tx_json=None if tx is None else json.dumps(tx.to_json(), sort_keys=True),
            token=None,
            resolved_at=now,
            last_detail=say(
                "sale.decided", "a person decided: {what} ({actor})", what=what, actor=actor
            ),
        )
        if answered:
            row = sales_sql.update_intent(conn, intent_id, **answered)  # it had ended
    reviews_sql.mark_decided(
        conn,
        intent_id,
        now=now,
        what=str(what),
        tx_id=getattr(decision, "tx_id", None),
        actor=actor,
    )
    service_sql.log_attempt(
        conn,
        kind="review",
        n=1,
        sent_at=now,
        intent_id=intent_id,
        outcome=type(decision).__name__,
        detail=f"{what}; decided by {actor}",
    )
    return row, reversal_id


async def read_named_row(
    ledger: Ledger, client: TerminalClient, sale: IntentRow, decision: ReviewDecision
) -> tuple[Transaction | None, bool]:
    """A row a person named that `sale`'s review did not offer, as the history shows it,
    and whether the kiosk can read that history (the sale went out under this pairing):
    another pairing's is out of reach, (None, False). A history that cannot be read now
    refuses the decision (nothing changed; try again)."""
    tx_id = getattr(decision, "tx_id", None)
    if tx_id is None or not spec.TX_ID_RE.match(tx_id):
        return None, True  # `decide` refuses what needs refusing
    view = await ledger.aread(lambda c: sale_review(c, sale))
    if any(c.transaction.id == tx_id for c in view.candidates):
        return None, True
    if sale.username not in (None, client.username):
        return None, False
    # a day either side of the sale, with `to` named: the history's own default ends at
    # the service's "now", and a service whose clock went back stamps commits at its old
    # high-water mark, ahead of that "now" (till simulator seeds 16766, 16924, 17684: the
    # true row of an unmeasured_clock review refused as "not in this terminal's history")
    at = datetime.fromtimestamp(sale.created_at, UTC)
    try:
        rows = client.iter_transactions(from_=at - NAMED_ROW_LOOKBACK, to=at + NAMED_ROW_LOOKBACK)
        async for tx in rows:
            if tx.id == tx_id:
                return tx, True
    except ListingFailed as exc:
        why = str(exc)
        raise ReviewRefused(
            say(
                "error.review_history_unread",
                "the history cannot be read now ({why}); nothing was changed",
                why=why,
            )
        ) from None
    return None, True
