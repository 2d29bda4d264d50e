"""The durable reversal queue: a refund is stored, then sent until it ends (refunded or refused).

Reversal is safe to repeat (spec): 5xx, timeouts and 429 are retried with backoff;
204 and 409 both mean refunded; 400/403/404 and other 4xx end it with the service's
reason; 401 keeps it until the terminal is re-paired. Another 2xx (200, 202, …) is no
proof that the refund landed: it is retried, and the retry's 204 or 409 ends it. A refund
of a sale tells the sale how it ended (`refund_queue.answer_sale`, the one place): refused,
the sale goes to a person (`refund_refused`). The queue's rules on a connection (one refund
per row, a sale's refund, one made by hand) are `qrpos.ledger.refund_queue`'s.
"""

from __future__ import annotations

import asyncio
import functools
import time

from qrpos import spec
from qrpos.ledger import refunds_sql, sales_sql, service_sql
from qrpos.ledger.clockreading import offset_from
from qrpos.ledger.context import Context
from qrpos.ledger.events import Effect, RefundEvent
from qrpos.ledger.moves import refund_move
from qrpos.ledger.refund_queue import answer_sale
from qrpos.ledger.states import (
    RATE_LIMITED,
    REPAIR_NEEDED,
    Moment,
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
    ListingFailed,
    RateLimited,
    Refunded,
    ReverseOutcome,
    Unresolved,
)


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


#: how long a landed refund by hand may spend reading the history for its row's amount
PRICING_S = 15.0


async def price_from_history(ctx: Context, row: ReversalRow, *, deadline: float) -> ReversalRow:
    """The amount of a landed refund by hand of a row no sale of this outbox holds (another
    install's charge, a review's candidate), read from the history: the reverse call takes
    no amount and its 204 has no body, so without it the shift's refunds made would count
    the whole row handed back as 0 MNT. Best effort within the deadline (at most
    `PRICING_S`): a history that cannot be read, or a row older than its default window,
    leaves the amount unknown, as it was."""
    if row.state is not ReversalState.REFUNDED or row.amount_mnt is not None:
        return row
    budget = min(PRICING_S, deadline - time.monotonic())
    if budget <= 0:
        return row
    amount: int | None = None
    try:
        async with asyncio.timeout(budget):
            async for tx in ctx.client.iter_transactions(limit=spec.LIST_LIMIT_MAX):
                if tx.id == row.tx_id and tx.type is spec.TxType.CHARGE:
                    amount = tx.amount_mnt
                    break
    except (TimeoutError, ListingFailed):
        return row
    if amount is None:
        return row
    return await ctx.ledger.awrite(
        functools.partial(refunds_sql.update_reversal, reversal_id=row.id, amount_mnt=amount)
    )
