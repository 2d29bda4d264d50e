"""Driving one charge intent to a known outcome: send, retry, back off, look it up.

Follows the spec's caller-handling table. The drive names what happened (a reply's event,
`timing.next_step` for time passing) and carries out the move the table of moves gives
(`qrpos.ledger.moves`); it chooses no state itself. Its look at the history is the desk's
to hand in (`lookup.check_history`): no driver imports another. Every request is preceded
by a commit that marks it in flight and followed by a commit of what came back, so a crash
at any point leaves a row the next process can continue from (same Idempotency-Key).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable

from qrpos.ledger import refunds_sql, reviews_sql, sales_sql, service_sql
from qrpos.ledger.abandon import interrupted_changes
from qrpos.ledger.claims import (
    OTHER_TERMINAL,
    Candidate,
    candidates_json,
)
from qrpos.ledger.clockreading import offset_from, plausible
from qrpos.ledger.context import Context
from qrpos.ledger.events import Charged, Effect, Move, Refusal, SaleEvent
from qrpos.ledger.moves import IF_ABSENT, charged_value, reply_event, sale_cell, sale_move
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.reply_checks import check_reply, check_reply_time
from qrpos.ledger.states import (
    RATE_LIMITED,
    REPAIR_NEEDED,
    IntentChanges,
    IntentRow,
    IntentState,
    Moment,
)
from qrpos.ledger.timing import (
    RATE_LIMITED_STATUS,
    due_on_boot,
    may_send,
    next_step,
    retry_wait,
    settle_left,
    since_first_send,
    wait_for,
    waits_for_key,
)
from qrpos.ledger.typed_rows import Connection
from qrpos.ledger.views import Phase, SaleProgress
from qrpos.ledger.windows import measured_for, spanning
from qrpos.said import Said, say
from qrpos.service import (
    Approved,
    ChargeOutcome,
    CredentialsRejected,
    Declined,
    RateLimited,
    TokenUsed,
    Unresolved,
)

__all__ = ["Context", "LookUp", "ProgressCallback", "drive", "may_send", "send_once"]

log = logging.getLogger("qrpos.ledger")

ProgressCallback = Callable[[SaleProgress], None]
#: one look at a sale's history, committed: the sale and the table's move it applied (None:
#: none); the desk hands in `lookup.check_history`
LookUp = Callable[[Context, IntentRow], Awaitable[tuple[IntentRow, Move | None]]]


def _clean_event(outcome: ChargeOutcome) -> SaleEvent:
    """The reply's event, as it would read with nothing unclear before it."""
    if isinstance(outcome, Approved):
        return SaleEvent.REPLY_APPROVED
    if isinstance(outcome, Unresolved) and outcome.sent:
        return SaleEvent.REPLY_UNCLEAR
    if isinstance(outcome, RateLimited | Unresolved):
        return SaleEvent.REPLY_NOT_DELIVERED
    if isinstance(outcome, CredentialsRejected):
        return SaleEvent.REPLY_CREDENTIALS_REJECTED
    if isinstance(outcome, Declined):
        return SaleEvent.REPLY_DECLINED
    if isinstance(outcome, TokenUsed):
        return SaleEvent.REPLY_TOKEN_USED
    return SaleEvent.REPLY_REFUSED


def _reply_words(outcome: ChargeOutcome) -> Said:
    """The sale's last word for a clean answer (declined, refused, token used)."""
    if isinstance(outcome, Declined):
        return say("sale.declined", "declined ({code})", code=outcome.code or "no code")
    if isinstance(outcome, TokenUsed):
        return say("sale.token_used", "QR token already used (409)")
    return say(
        "sale.refused",
        "refused (HTTP {status}): {message}",
        status=outcome.exchange.status or 0,
        message=getattr(outcome, "message", ""),
    )


def _outcome_changes(
    row: IntentRow, outcome: ChargeOutcome, policy: RetryPolicy, moment: Moment, jitter: float
) -> tuple[IntentChanges, Move]:
    """The columns to write after a charge request came back with `outcome`, and the move:
    the table of moves (`qrpos.ledger.moves`) chooses the state; this gathers the facts."""
    ex = outcome.exchange
    now = moment.wall
    unclear_before = bool(row.maybe_sent)
    event = reply_event(_clean_event(outcome), unclear_before)
    move = sale_move(row.state, event)
    changes: IntentChanges = {
        "in_flight": 0,
        "last_end_at": now,
        "last_status": ex.status,
        "state": IntentState(move.next),
    }
    if move.charged is not Charged.KEEP:
        changes["charged"] = charged_value(move, row.charged)
    if move.charged in (Charged.YES, Charged.NO):
        changes.update({"token": None, "resolved_at": now})  # the outcome is known
    if isinstance(outcome, Declined):
        changes["decline_code"] = outcome.code
    if isinstance(outcome, Approved):
        tx = outcome.transaction
        changes.update(
            {
                "proof": "reply",
                "tx_id": tx.id,
                "tx_json": json.dumps(tx.to_json(), sort_keys=True),
                "last_detail": None,
            }
        )
    elif isinstance(outcome, RateLimited | Unresolved):
        sent = event is SaleEvent.REPLY_UNCLEAR
        why = outcome.why if isinstance(outcome, Unresolved) else RATE_LIMITED
        retry_after = outcome.retry_after_s if isinstance(outcome, RateLimited) else None
        changes.update(
            {
                "last_detail": why,
                "maybe_sent": 1 if (sent or unclear_before) else 0,
                "next_try_at": now + policy.backoff_s(row.attempts, retry_after, jitter=jitter),
            }
        )
        if sent:
            changes["last_unclear_end_at"] = now  # late commits are waited for from here
            changes["unclear_end_boot"], changes["unclear_end_up"] = moment.boot, moment.up
    elif isinstance(outcome, CredentialsRejected):
        changes.update({"may_resend": 0, "last_detail": REPAIR_NEEDED})
    elif event in IF_ABSENT:
        # the service answered this key; the history confirms once late commits settled
        # a 422 evaluated the key afresh (nothing committed); a 409 may be the duplicate
        # of a charge that did commit ("verify before recharging"): without a row, review
        changes.update(
            {
                "may_resend": 0,
                "if_absent": IF_ABSENT[event],
                "last_detail": say(
                    "sale.answered_after_unclear",
                    "{why} after an unclear attempt: checking the history",
                    why=_reply_words(outcome),
                ),
            }
        )
    else:
        changes["last_detail"] = _reply_words(outcome)
    return changes, move


def _checked_approval(
    conn: Connection,
    row: IntentRow,
    outcome: Approved,
    changes: IntentChanges,
    policy: RetryPolicy,
    moment: Moment,
) -> Move | None:
    """A 201 is proof only when it matches the request and no other sale owns it, nor is it
    a row the outbox knows as something else: refunded through its queue, or another
    install's charge. Returns the mismatch's move when it is not (None: it is)."""
    tx = outcome.transaction
    now = moment.wall
    # real seconds since the first send (None after a reboot: not known, no lower limit)
    elapsed = since_first_send(row, moment).exactly
    why = check_reply(tx, row.amount_mnt, service_sql.terminal_id(conn, row.username)) or (
        check_reply_time(
            tx, plausible(outcome.exchange.server_date, now), elapsed, policy.max_clock_skew_s
        )
    )
    holder = reviews_sql.holder_of(conn, tx.id, besides=row.id)
    others: tuple[int, ...] = () if holder is None else (holder,)
    if why is None and others:
        why = say(
            "reply.owned",
            "the reply's {id} already belongs to sale #{sale}",
            id=tx.id,
            sale=others[0],
        )
    if why is None and refunds_sql.reversal_for_tx(conn, tx.id) is not None:
        why = say(
            "reply.refunded",
            "the reply's {id} is a charge this kiosk refunds (or refunded)",
            id=tx.id,
        )
    if why is None and service_sql.foreign_ids(conn, [tx.id]):
        why = say(
            "reply.foreign", "the reply's {id} was seen as another install's charge", id=tx.id
        )
    if why is None:
        service_sql.learn_terminal_id(conn, tx.terminal_id, row.username)
        return None
    move = sale_move(row.state, SaleEvent.REPLY_MISMATCH)
    assert move.review is not None
    reviews_sql.upsert_review(
        conn, row.id, move.review, candidates_json([Candidate(tx, others)]), now
    )
    changes.update(
        {
            "state": IntentState(move.next),
            "charged": charged_value(move, row.charged),
            "proof": None,
            "tx_id": None,
            "tx_json": None,
            "may_resend": 0,
            "last_detail": say(
                "sale.reply_mismatch", "reply_mismatch: {why}; a person must decide", why=why
            ),
        }
    )
    return move


def _keep_due(ctx: Context, key: tuple[str, int], due: float | None, at: Moment) -> None:
    """Keep a next try's due time on the boot clock, for this process's waits."""
    stamp = None if due is None else due_on_boot(due - at.wall, at)
    if stamp is None:
        ctx.due_up.pop(key, None)
    else:
        ctx.due_up[key] = stamp


async def send_once(ctx: Context, row: IntentRow, *, first: bool) -> tuple[IntentRow, Move]:
    """One charge request with the intent's key; both sides committed. Returns the sale and
    the table's move its reply applied."""
    assert row.token is not None
    if not first:
        now = ctx.now()
        row = await ctx.ledger.awrite(
            lambda c: sales_sql.update_intent(
                c,
                row.id,
                attempts=row.attempts + 1,
                in_flight=1,
                last_sent_at=now,
                probed_to=None,  # a new send: its commit may lie past the old probe
                # sent under the pairing in use, whose history shows it (a sale that may
                # have reached an old pairing is a person's, in `drive`: review 8)
                username=ctx.client.username,
            )
        )
    sent_at = row.last_sent_at or ctx.now()
    token = row.token
    assert token is not None
    outcome = await ctx.client.charge(token, row.amount_mnt, row.idem_key)
    moment = ctx.moment()
    now = moment.wall
    changes, move = _outcome_changes(row, outcome, ctx.policy, moment, ctx.jitter())
    _keep_due(ctx, ("sale", row.id), changes.get("next_try_at"), moment)
    offset = offset_from(outcome.exchange.server_date, sent_at, now)
    if offset is not None:
        changes["clock_skew_s"] = offset

    def commit(conn: Connection) -> tuple[IntentRow, Move]:
        applied = move
        if offset is not None:
            # the window spans this measurement (in the sale's own wall-clock frame) and
            # every earlier one trusted for the sale
            framed = measured_for(row, offset, moment)
            lo, hi = spanning(row, service_sql.read_clock(conn), ctx.policy, framed)
            changes.update({"skew_lo_s": lo, "skew_hi_s": hi})
            service_sql.observe(
                conn, offset, now, ctx.policy.window_margin_s, moment.boot, moment.up
            )
        if isinstance(outcome, Approved):
            applied = _checked_approval(conn, row, outcome, changes, ctx.policy, moment) or move
        service_sql.log_exchange(
            conn,
            kind="charge",
            n=row.attempts,
            sent_at=sent_at,
            outcome=outcome,
            intent_id=row.id,
            detail=changes.get("last_detail"),
        )
        return sales_sql.update_intent(conn, row.id, **changes), applied

    return await ctx.ledger.awrite(commit)


def _next_lookup_at(row: IntentRow, policy: RetryPolicy) -> float:  # wall time, bounded by drive
    """When to look again: every `lookup_interval_s`, and right when late commits settled
    (so a same-key answer ends the sale as soon as it may, not up to an interval later)."""
    last = row.last_lookup_at or 0.0
    due = last + policy.lookup_interval_s
    unclear_end = row.last_unclear_end_at
    if unclear_end is not None and last < unclear_end + policy.settle_s < due:
        return unclear_end + policy.settle_s
    return due


async def _paired_elsewhere(ctx: Context, row: IntentRow) -> IntentRow:
    """A sale that may have reached the service under a pairing the kiosk no longer has:
    sending its key under the new pairing would be a new charge, and the new terminal's
    history does not hold its row. The outcome is unknown: a person decides."""
    now = ctx.now()
    said = say(
        "sale.other_terminal",
        OTHER_TERMINAL + ": sent as {was}, the kiosk is now paired as {now}; a person must decide",
        was=row.username or "?",
        now=ctx.client.username,
    )

    move = sale_move(row.state, SaleEvent.OTHER_PAIRING)
    assert move.review is not None

    def commit(conn: Connection) -> IntentRow:
        reviews_sql.upsert_review(conn, row.id, move.review or OTHER_TERMINAL, "[]", now)
        return sales_sql.update_intent(
            conn,
            row.id,
            state=IntentState(move.next),
            token=None,
            watching=0,
            may_resend=0,
            resolved_at=now,
            last_detail=said,
        )

    log.warning("charge #%d was sent under another pairing; it waits for a review", row.id)
    return await ctx.ledger.awrite(commit)


def _report(
    progress: ProgressCallback | None, row: IntentRow, phase: Phase, started: float, detail: str
) -> None:
    if progress is not None:
        progress(SaleProgress(row.id, phase, row.attempts, time.monotonic() - started, detail))


async def drive(
    ctx: Context,
    row: IntentRow,
    *,
    look: LookUp,
    deadline: float,
    fresh: bool = False,
    progress: ProgressCallback | None = None,
) -> IntentRow:
    """Drive one sale until a move answers the cashier (the table's `answer_cashier`: the
    till goes back the moment the sale leaves the open states), the deadline passes, or (a
    watched abandon) while a look-up of it is due; `look` is one look at its history."""
    started = time.monotonic()
    if row.in_flight and not fresh:
        # a previous process died mid-request: the request may have reached the service
        state = IntentState(sale_move(row.state, SaleEvent.INTERRUPTED).next)
        ended = interrupted_changes(ctx.now(), ctx.boot())
        ended["state"] = state
        ended["last_detail"] = say(
            "sale.interrupted", "interrupted during a request: outcome unknown"
        )
        row = await ctx.ledger.awrite(lambda c: sales_sql.update_intent(c, row.id, **ended))
        log.warning("charge #%d was interrupted mid-request; resolving", row.id)
    first = fresh
    applied: Move | None  # the move a step applied: its effects are carried out here
    while row.is_open or (row.state is IntentState.ABANDONED and row.watching):
        moment = ctx.moment()
        step = sale_cell(row.state, next_step(row, ctx.policy, moment, first=first))
        if isinstance(step, Refusal):
            return row  # nothing to do for it now (a 401 waits for re-pairing, …)
        if row.maybe_sent and row.username not in (None, ctx.client.username):
            # the old pairing's late commits get `settle_s` before a person is asked (its
            # history cannot show a commit not made yet; charge-safety rule 4, review 7)
            if (left := settle_left(ctx.policy, row, moment)) > 0:
                if not await ctx.pause(left, deadline):
                    return row
                continue
            return await _paired_elsewhere(ctx, row)
        if Effect.SEND in step.effects:
            wait = 0.0
            # the send that confirms a history match goes at once: the table's
            # `lookup_match_to_confirm` asks for a send, no wait (the cashier's answer is
            # due a send's timeout and one look-up after the history showed the charge);
            # one still owed after a 429 waits the `Retry-After` the service named
            if not first and (not waits_for_key(row) or row.last_status == RATE_LIMITED_STATUS):
                due = row.next_try_at
                on_boot = ctx.due_up.get(("sale", row.id))
                wait = retry_wait(due, row.last_status, row.attempts, ctx.policy, moment, on_boot)
            if wait > 0:
                _report(progress, row, "backing_off", started, f"next try in {wait:.1f} s")
                if not await ctx.pause(wait, deadline):
                    return row
            phase: Phase = "sending" if row.attempts <= 1 and first else "retrying"
            _report(progress, row, phase, started, row.last_detail or "")
            row, applied = await send_once(ctx, row, first=first)
            first = False
        elif Effect.LOOK_UP not in step.effects:
            # nothing ever reached the service (refused connections, 429s): not charged
            row = await ctx.ledger.awrite(
                functools.partial(
                    sales_sql.update_intent,
                    intent_id=row.id,
                    state=IntentState(step.next),
                    charged=charged_value(step, row.charged),
                    token=None,
                    resolved_at=ctx.now(),
                    last_detail=say(
                        "sale.never_reached",
                        "never reached the service ({why})",
                        why=Said.from_json(row.detail_said) or row.last_detail or "",
                    ),
                )
            )
            applied = step
        else:
            watching = row.state is IntentState.ABANDONED
            if row.lookups and row.last_lookup_at is not None:
                longest = max(ctx.policy.lookup_interval_s, ctx.policy.settle_s)
                on_boot = ctx.due_up.get(("lookup", row.id))
                wait = wait_for(_next_lookup_at(row, ctx.policy), moment, longest, on_boot)
                if watching and wait > 0:
                    return row  # not due yet; recovery goes on to the next one
                if not await ctx.pause(wait, deadline):
                    return row
            _report(progress, row, "checking_history", started, row.last_detail or "")
            row, applied = await look(ctx, row)
            # the next look's due time on the boot clock too: a wall clock stepped after
            # this look changes no wait of this process
            _keep_due(ctx, ("lookup", row.id), _next_lookup_at(row, ctx.policy), ctx.moment())
            if watching:
                return row  # one look per pass, so one stuck sale never starves the others
        if applied is not None and Effect.ANSWER_CASHIER in applied.effects:
            return row  # the till goes back to the cashier: the sale's answer is known
        if time.monotonic() >= deadline:
            return row
    return row
