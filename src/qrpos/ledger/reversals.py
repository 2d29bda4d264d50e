"""The durable reversal queue: a refund is stored, then sent until it is settled.

Reversal is safe to repeat (spec): 5xx, timeouts and 429 are retried with backoff;
204 and 409 both mean refunded; 400/403/404 and other 4xx end it with the service's
reason; 401 keeps it until the terminal is re-paired. Another 2xx (200, 202, …) is no
proof that the refund landed: it is retried, and the retry's 204 or 409 settles it.
"""

from __future__ import annotations

import functools
import time

from qrpos import spec
from qrpos.ledger import refunds_sql, sales_sql, service_sql
from qrpos.ledger.context import Context
from qrpos.ledger.states import (
    RATE_LIMITED,
    REPAIR_NEEDED,
    IntentState,
    Moment,
    ReversalChanges,
    ReversalRow,
    ReversalState,
    offset_from,
)
from qrpos.ledger.typed_rows import Connection
from qrpos.said import say
from qrpos.service import (
    AlreadyReversed,
    CredentialsRejected,
    RateLimited,
    Refunded,
    ReverseOutcome,
    Unresolved,
)


def _changes(
    ctx: Context, row: ReversalRow, outcome: ReverseOutcome, now: float
) -> ReversalChanges:
    changes: ReversalChanges = {"last_status": outcome.exchange.status}
    if isinstance(outcome, Refunded) and outcome.exchange.status != spec.REVERSE_SUCCESS_STATUS:
        # the contract's success is 204 alone; a 202 may mean "accepted, not yet applied"
        changes.update(
            {
                "next_try_at": now + ctx.policy.backoff_s(row.attempts),
                "message": say(
                    "refund.unexpected_status",
                    "unexpected HTTP {status}: will retry",
                    status=outcome.exchange.status or 0,
                ),
            }
        )
    elif isinstance(outcome, Refunded | AlreadyReversed):
        changes.update(
            {
                "state": ReversalState.REFUNDED,
                "resolved_at": now,
                "message": say("refund.refunded", "refunded")
                if isinstance(outcome, Refunded)
                else say("refund.already", "already reversed: the refund had landed"),
            }
        )
    elif isinstance(outcome, CredentialsRejected):
        changes.update(
            {
                "state": ReversalState.CREDENTIALS_REJECTED,
                "message": REPAIR_NEEDED,
            }
        )
    elif isinstance(outcome, RateLimited | Unresolved):
        retry_after = outcome.retry_after_s if isinstance(outcome, RateLimited) else None
        why = outcome.why if isinstance(outcome, Unresolved) else RATE_LIMITED
        changes.update(
            {
                "next_try_at": now + ctx.policy.backoff_s(row.attempts, retry_after),
                "message": say("refund.will_retry", "{why}: will retry", why=why),
            }
        )
    else:
        text = getattr(outcome, "message", "") or f"HTTP {outcome.exchange.status}"
        said = say("refund.refused", "{message}", message=text)
        changes.update({"state": ReversalState.REFUSED, "resolved_at": now, "message": said})
    return changes


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
    refunded = updated.state is ReversalState.REFUNDED
    if refunded and row.intent_id is not None and row.reason == "abandoned":
        sales_sql.update_intent(
            conn,
            row.intent_id,
            state=IntentState.REVERSED_AFTER_ABANDON,
            watching=0,
            resolved_at=now,
            last_detail=say(
                "sale.refunded_after_abandon",
                "charged as {id} after abandon; refunded",
                id=row.tx_id,
            ),
        )
    return updated


async def drive_reversal(ctx: Context, row: ReversalRow, *, deadline: float) -> ReversalRow:
    """Send the reversal until it is settled or the deadline passes."""
    while row.state is ReversalState.PENDING:
        now = ctx.now()
        wait = max(0.0, (row.next_try_at or now) - now)
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
        changes = _changes(ctx, row, outcome, now)
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
