"""The durable reversal queue: a refund is stored, then sent until it ends (refunded or refused).

Reversal is safe to repeat (spec): 5xx, timeouts and 429 are retried with backoff;
204 and 409 both mean refunded; 400/403/404 and other 4xx end it with the service's
reason; 401 keeps it until the terminal is re-paired. Another 2xx (200, 202, …) is no
proof that the refund landed: it is retried, and the retry's 204 or 409 ends it. A refund
of a sale tells the sale how it ended (`answer_sale`, the one place): refused, the sale goes to a
person (`refund_refused`).
"""

from __future__ import annotations

import functools
import time

from qrpos import spec
from qrpos.ledger import refunds_sql, reviews_sql, sales_sql, service_sql
from qrpos.ledger.admission import Admission, refund_admission
from qrpos.ledger.claims import Candidate, Disputed, Proven, candidates_json
from qrpos.ledger.clockreading import offset_from
from qrpos.ledger.context import Context
from qrpos.ledger.events import Charged, Effect, RefundEvent, Refusal, SaleEvent
from qrpos.ledger.moves import (
    charged_value,
    proven_event,
    refund_event,
    refund_move,
    sale_cell,
)
from qrpos.ledger.states import (
    RATE_LIMITED,
    REPAIR_NEEDED,
    IntentChanges,
    IntentRow,
    IntentState,
    Moment,
    RefundReason,
    ReversalChanges,
    ReversalRow,
    ReversalState,
)
from qrpos.ledger.timing import due_on_boot, retry_wait
from qrpos.ledger.typed_rows import Connection
from qrpos.said import Said, say
from qrpos.service import (
    AlreadyReversed,
    CredentialsRejected,
    RateLimited,
    Refunded,
    ReverseOutcome,
    Unresolved,
)
from qrpos.service.models import transaction_from_json_text


def _event(outcome: ReverseOutcome) -> RefundEvent:
    """The refund's event for the service's answer."""
    if isinstance(outcome, Refunded):
        # the contract's success is 204 alone; a 202 may mean "accepted, not yet applied"
        if outcome.exchange.status != spec.REVERSE_SUCCESS_STATUS:
            return RefundEvent.ANSWER_UNEXPECTED_2XX
        return RefundEvent.ANSWER_REFUNDED
    if isinstance(outcome, AlreadyReversed):
        return RefundEvent.ANSWER_ALREADY_REVERSED
    if isinstance(outcome, CredentialsRejected):
        return RefundEvent.ANSWER_CREDENTIALS_REJECTED
    if isinstance(outcome, RateLimited):
        return RefundEvent.ANSWER_RATE_LIMITED
    if isinstance(outcome, Unresolved):
        return RefundEvent.ANSWER_UNCLEAR
    return RefundEvent.ANSWER_REFUSED


def _words(event: RefundEvent, outcome: ReverseOutcome) -> Said:
    """The refund's last word for its answer."""
    if event is RefundEvent.ANSWER_UNEXPECTED_2XX:
        return say(
            "refund.unexpected_status",
            "unexpected HTTP {status}: will retry",
            status=outcome.exchange.status or 0,
        )
    if event is RefundEvent.ANSWER_REFUNDED:
        return say("refund.refunded", "refunded")
    if event is RefundEvent.ANSWER_ALREADY_REVERSED:
        return say("refund.already", "already reversed: the refund had landed")
    if event is RefundEvent.ANSWER_CREDENTIALS_REJECTED:
        return REPAIR_NEEDED
    if isinstance(outcome, Unresolved):
        return say("refund.will_retry", "{why}: will retry", why=outcome.why)
    if event is RefundEvent.ANSWER_RATE_LIMITED:
        return say("refund.will_retry", "{why}: will retry", why=RATE_LIMITED)
    text = getattr(outcome, "message", "") or f"HTTP {outcome.exchange.status}"
    return say("refund.refused", "{message}", message=text)


def _changes(
    ctx: Context, row: ReversalRow, outcome: ReverseOutcome, now: float, jitter: float
) -> ReversalChanges:
    """The columns to write after a refund request came back: the table chooses the state."""
    event = _event(outcome)
    move = refund_move(row.state, event)
    changes: ReversalChanges = {
        "last_status": outcome.exchange.status,
        "state": ReversalState(move.next),
        "message": _words(event, outcome),
    }
    if Effect.WAIT in move.effects:
        retry_after = outcome.retry_after_s if isinstance(outcome, RateLimited) else None
        delay = ctx.policy.backoff_s(row.attempts, retry_after, jitter=jitter)
        changes["next_try_at"] = now + delay
    if move.next in (ReversalState.REFUNDED, ReversalState.REFUSED):
        changes["resolved_at"] = now
    return changes


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
    if cell.review is not None:
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


def _answer_sale(conn: Connection, refund: ReversalRow, now: float) -> None:
    """Tell the refund's sale how its refund ended (`answer_sale`)."""
    if refund.intent_id is None:
        return  # a manual refund of a row no sale was proven on
    sale = sales_sql.get_intent(conn, refund.intent_id)
    if sale is None:
        return
    changes = answer_sale(conn, sale, refund, now)
    if changes:
        sales_sql.update_intent(conn, sale.id, **changes)


def _commit(
    conn: Connection,
    *,
    row: ReversalRow,
    sent_at: float,
    outcome: ReverseOutcome,
    changes: ReversalChanges,
    now: float,
    offset: float | None,
    tolerance_s: float,
    moment: Moment,
) -> ReversalRow:
    if offset is not None:
        service_sql.observe(conn, offset, now, tolerance_s, moment.boot, moment.up)
    service_sql.log_exchange(
        conn,
        kind="reverse",
        n=row.attempts,
        sent_at=sent_at,
        outcome=outcome,
        reversal_id=row.id,
        detail=changes.get("message"),
    )
    updated = refunds_sql.update_reversal(conn, row.id, **changes)
    if updated.state is not row.state:
        _answer_sale(conn, updated, now)
    return updated


async def drive_reversal(ctx: Context, row: ReversalRow, *, deadline: float) -> ReversalRow:
    """Send the reversal until it ends (refunded, refused, kept for re-pairing) or the deadline
    passes.

    Its waits go through the one bounded wait (`timing.retry_wait`): in boot-clock
    seconds when this process scheduled the try, and never longer than its backoff asked
    for, so a wall clock stepped back while a refund backs off cannot hold it."""
    while row.state is ReversalState.PENDING:
        up = ctx.due_up.get(("refund", row.id))
        wait = retry_wait(
            row.next_try_at, row.last_status, row.attempts, ctx.policy, ctx.moment(), up
        )
        if not await ctx.pause(wait, deadline):
            return row
        sent_at = ctx.now()
        row = await ctx.ledger.awrite(
            functools.partial(
                refunds_sql.update_reversal, reversal_id=row.id, attempts=row.attempts + 1
            )
        )
        outcome = await ctx.client.reverse(row.tx_id)
        moment = ctx.moment()
        now = moment.wall
        changes = _changes(ctx, row, outcome, now, ctx.jitter())
        due = changes.get("next_try_at")
        stamp = None if due is None else due_on_boot(due - now, moment)
        if stamp is None:
            ctx.due_up.pop(("refund", row.id), None)
        else:
            ctx.due_up[("refund", row.id)] = stamp
        row = await ctx.ledger.awrite(
            functools.partial(
                _commit,
                row=row,
                sent_at=sent_at,
                outcome=outcome,
                changes=changes,
                now=now,
                offset=offset_from(outcome.exchange.server_date, sent_at, now),
                tolerance_s=ctx.policy.window_margin_s,
                moment=moment,
            )
        )
        if time.monotonic() >= deadline:
            return row
    return row
