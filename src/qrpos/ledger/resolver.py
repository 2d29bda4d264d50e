"""Driving one charge intent to a known outcome: send, retry, back off, look it up.

Follows the spec's caller-handling table. Every request is preceded by a commit that
marks it in flight and followed by a commit of what came back, so a crash at any
point leaves a row the next process can continue from (same Idempotency-Key).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from qrpos.ledger import records
from qrpos.ledger.history import look_up, matches, window_for
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.records import IntentRow
from qrpos.ledger.states import IntentState
from qrpos.ledger.store import Ledger
from qrpos.ledger.views import Phase, SaleProgress
from qrpos.service import (
    Approved,
    ChargeOutcome,
    CredentialsRejected,
    Declined,
    RateLimited,
    TerminalClient,
    TokenUsed,
    Unresolved,
)
from qrpos.service.outcomes import Exchange

log = logging.getLogger("qrpos.ledger")

ProgressCallback = Callable[[SaleProgress], None]

#: what an intent ends as when the service answered definitively after an unclear attempt
#: and the history then shows nothing
_ABSENT_STATE = {
    "declined": IntentState.DECLINED,
    "refused": IntentState.REFUSED,
    "not_charged": IntentState.NOT_CHARGED,
}


@dataclass
class Context:
    """What the resolver needs; shared with the reversal queue."""

    ledger: Ledger
    client: TerminalClient
    policy: RetryPolicy
    clock: Callable[[], datetime]

    def now(self) -> float:
        """The wall clock as UTC epoch seconds (what the outbox stores)."""
        return self.clock().timestamp()

    async def pause(self, seconds: float, deadline: float) -> bool:
        """Wait `seconds` unless that passes the deadline; False when it would."""
        if seconds <= 0:
            await asyncio.sleep(0)  # let other tasks run even when nothing is to wait
            return True
        if time.monotonic() + seconds > deadline:
            return False
        if self.policy.sleep:
            await asyncio.sleep(seconds)
        return True


def _skew(exchange: Exchange) -> float | None:
    if exchange.server_date is None or exchange.sent_at is None:
        return None
    midpoint = exchange.sent_at.timestamp() + (exchange.elapsed_s or 0.0) / 2
    return exchange.server_date.timestamp() - midpoint


def may_send(row: IntentRow, policy: RetryPolicy, now: float) -> bool:
    """True while re-sending with the same key is still allowed for this intent."""
    first = row.first_sent_at if row.first_sent_at is not None else now
    return (
        row.state in (IntentState.PENDING, IntentState.UNRESOLVED)
        and bool(row.may_resend)
        and row.token is not None
        and row.attempts < policy.max_sends
        and now - first < policy.resend_horizon_s
    )


def _outcome_changes(
    row: IntentRow, outcome: ChargeOutcome, policy: RetryPolicy, now: float
) -> dict[str, Any]:
    """The columns to write after a charge request came back with `outcome`."""
    ex = outcome.exchange
    changes: dict[str, Any] = {"in_flight": 0, "last_end_at": now, "last_status": ex.status}
    skew = _skew(ex)
    if skew is not None:
        changes["clock_skew_s"] = skew
    unclear_before = bool(row.maybe_sent)
    if isinstance(outcome, Approved):
        tx = outcome.transaction
        changes.update(
            state=IntentState.APPROVED,
            charged=1,
            tx_id=tx.id,
            token=None,
            tx_json=json.dumps(tx.to_json(), sort_keys=True),
            resolved_at=now,
            last_detail=None,
        )
    elif isinstance(outcome, RateLimited | Unresolved):
        sent = isinstance(outcome, Unresolved) and outcome.sent
        detail = outcome.reason if isinstance(outcome, Unresolved) else "rate limited (429)"
        retry_after = outcome.retry_after_s if isinstance(outcome, RateLimited) else None
        changes.update(
            state=IntentState.UNRESOLVED,
            last_detail=detail,
            maybe_sent=1 if (sent or unclear_before) else 0,
            next_try_at=now + policy.backoff_s(row.attempts, retry_after),
        )
    elif isinstance(outcome, CredentialsRejected):
        changes.update(
            state=IntentState.CREDENTIALS_REJECTED,
            may_resend=0,
            last_detail="credentials rejected (401): re-pair the terminal",
            charged=None if unclear_before else 0,
        )
        if not unclear_before:
            changes.update(token=None, resolved_at=now)
    else:
        if isinstance(outcome, Declined):
            final, detail = IntentState.DECLINED, f"declined ({outcome.code or 'no code'})"
            changes["decline_code"] = outcome.code
        elif isinstance(outcome, TokenUsed):
            final, detail = IntentState.TOKEN_USED, "QR token already used (409)"
        else:
            message = getattr(outcome, "message", "")
            final, detail = IntentState.REFUSED, f"refused (HTTP {ex.status}): {message}"
        if unclear_before:
            # an earlier attempt may have charged: stop sending, let the history decide
            absent = (
                "declined"
                if final is IntentState.DECLINED
                else ("refused" if final is IntentState.REFUSED else "not_charged")
            )
            changes.update(
                state=IntentState.UNRESOLVED,
                may_resend=0,
                if_absent=absent,
                last_detail=f"{detail} after an unclear attempt: checking the history",
            )
        else:
            changes.update(state=final, charged=0, token=None, resolved_at=now, last_detail=detail)
    return changes


async def send_once(ctx: Context, row: IntentRow, *, first: bool) -> IntentRow:
    """One charge request with the intent's key; both sides committed."""
    assert row.token is not None
    if not first:
        now = ctx.now()
        row = await ctx.ledger.awrite(
            lambda c: records.update_intent(
                c,
                row.id,
                attempts=row.attempts + 1,
                in_flight=1,
                last_sent_at=now,
                first_sent_at=row.first_sent_at if row.first_sent_at is not None else now,
            )
        )
    sent_at = row.last_sent_at or ctx.now()
    token = row.token
    assert token is not None
    outcome = await ctx.client.charge(token, row.amount_mnt, row.idem_key)
    now = ctx.now()
    changes = _outcome_changes(row, outcome, ctx.policy, now)
    tx_id = changes.get("tx_id")

    def commit(conn: Any) -> IntentRow:
        if tx_id is not None and tx_id in records.claimed_tx_ids(conn, row.id):
            # the service handed us a transaction another sale already owns: a person decides
            changes.update(
                state=IntentState.NEEDS_REVIEW,
                charged=None,
                tx_id=None,
                last_detail=f"approved as {tx_id}, which another sale already claims",
            )
        records.log_exchange(
            conn,
            kind="charge",
            n=row.attempts,
            sent_at=sent_at,
            outcome=outcome,
            intent_id=row.id,
            detail=changes.get("last_detail"),
        )
        return records.update_intent(conn, row.id, **changes)

    return await ctx.ledger.awrite(commit)


async def check_history(ctx: Context, row: IntentRow) -> IntentRow:
    """One look at the history for `row`; commits what it concluded."""
    claimed, rivals = await ctx.ledger.aread(
        lambda c: (
            records.claimed_tx_ids(c, row.id),
            [r for r in records.watched_intents(c) if r.id != row.id and r.tx_id is None],
        )
    )
    started = ctx.now()
    found = await look_up(ctx.client, row, ctx.policy, claimed)
    # a candidate an abandoned sale of the same amount could also own is not ours to take
    contested = [
        tx.id
        for tx in found.candidates
        for rival in rivals
        if matches(tx, rival, window_for(rival, ctx.policy), claimed)
    ]
    now = ctx.now()
    changes: dict[str, Any] = {"lookups": row.lookups + 1, "last_lookup_at": now}
    watching = row.state is IntentState.ABANDONED
    if found.failure is not None:
        if isinstance(found.failure, CredentialsRejected) and not watching:
            changes.update(
                state=IntentState.CREDENTIALS_REJECTED,
                last_detail="credentials rejected (401) while checking the history",
            )
        outcome_name = type(found.failure).__name__
    elif contested:
        changes.update(
            state=IntentState.NEEDS_REVIEW,
            token=None,
            watching=0,
            resolved_at=now,
            last_detail=f"{contested[0]} matches this sale and an abandoned one: "
            "a person must decide",
        )
        outcome_name = "contested_candidate"
    elif len(found.candidates) == 1:
        tx = found.candidates[0]
        changes.update(tx_id=tx.id, tx_json=json.dumps(tx.to_json(), sort_keys=True), charged=1)
        if watching:
            changes.update(last_detail=f"found charged as {tx.id} after abandon: refunding")
        else:
            changes.update(
                state=IntentState.CHARGED_PER_HISTORY,
                token=None,
                resolved_at=now,
                last_detail=f"found in the history as {tx.id}",
            )
        outcome_name = "one_candidate"
    elif len(found.candidates) > 1:
        ids = ", ".join(tx.id for tx in found.candidates[:5])
        changes.update(
            state=IntentState.NEEDS_REVIEW,
            token=None,
            watching=0,
            resolved_at=now,
            last_detail=f"{len(found.candidates)} matching charges in the history ({ids}): "
            "a person must decide which, if any, is this sale",
        )
        outcome_name = "several_candidates"
    else:
        outcome_name = "no_candidate"
        if absent_is_final(ctx, row, now):
            if watching:
                changes.update(
                    watching=0,
                    charged=0,
                    resolved_at=now,
                    last_detail="abandoned; the history shows it was not charged",
                )
            else:
                changes.update(
                    state=_ABSENT_STATE.get(row.if_absent or "", IntentState.NOT_CHARGED),
                    charged=0,
                    token=None,
                    resolved_at=now,
                    last_detail="the history shows no such charge: not charged",
                )

    def commit(conn: Any) -> IntentRow:
        records.log_attempt(
            conn,
            kind="lookup",
            n=row.lookups + 1,
            sent_at=started,
            intent_id=row.id,
            elapsed_s=now - started,
            outcome=outcome_name,
            detail=changes.get("last_detail"),
        )
        if "tx_id" in changes and changes["tx_id"] in records.claimed_tx_ids(conn, row.id):
            changes.update(tx_id=None, tx_json=None, charged=None, state=row.state)
        return records.update_intent(conn, row.id, **changes)

    return await ctx.ledger.awrite(commit)


def absent_is_final(ctx: Context, row: IntentRow, now: float) -> bool:
    """Nothing found can be trusted only past the horizon and after late commits settled."""
    first = row.first_sent_at if row.first_sent_at is not None else row.created_at
    last = max(row.last_end_at or 0.0, row.last_sent_at or 0.0)
    return (
        not may_send(row, ctx.policy, now)
        and now - first >= ctx.policy.absent_after_s
        and now - last >= ctx.policy.settle_s
    )


def _report(
    progress: ProgressCallback | None, row: IntentRow, phase: Phase, started: float, detail: str
) -> None:
    if progress is not None:
        progress(SaleProgress(row.id, phase, row.attempts, time.monotonic() - started, detail))


async def drive(
    ctx: Context,
    row: IntentRow,
    *,
    deadline: float,
    fresh: bool = False,
    progress: ProgressCallback | None = None,
) -> IntentRow:
    """Work on one intent until it is settled or the deadline passes."""
    started = time.monotonic()
    if row.in_flight and not fresh:
        # a previous process died mid-request: the request may have reached the service
        now = ctx.now()
        state = IntentState.UNRESOLVED if row.state is IntentState.PENDING else row.state
        row = await ctx.ledger.awrite(
            lambda c: records.update_intent(
                c,
                row.id,
                in_flight=0,
                maybe_sent=1,
                state=state,
                last_end_at=now,
                last_detail="interrupted during a request: outcome unknown",
            )
        )
        log.warning("charge #%d was interrupted mid-request; resolving", row.id)
    first = fresh
    while row.is_open or (row.state is IntentState.ABANDONED and row.watching):
        if row.state is IntentState.CREDENTIALS_REJECTED:
            return row
        now = ctx.now()
        if first or (row.state is not IntentState.ABANDONED and may_send(row, ctx.policy, now)):
            wait = 0.0 if first else max(0.0, (row.next_try_at or now) - now)
            if wait > 0:
                _report(progress, row, "backing_off", started, f"next try in {wait:.1f} s")
                if not await ctx.pause(wait, deadline):
                    return row
            phase: Phase = "sending" if row.attempts <= 1 and first else "retrying"
            _report(progress, row, phase, started, row.last_detail or "")
            row = await send_once(ctx, row, first=first)
            first = False
        elif not row.maybe_sent and row.state is not IntentState.ABANDONED:
            # nothing ever reached the service (refused connections, 429s): not charged
            row = await ctx.ledger.awrite(
                functools.partial(
                    records.update_intent,
                    intent_id=row.id,
                    state=IntentState.NOT_CHARGED,
                    charged=0,
                    token=None,
                    resolved_at=ctx.now(),
                    last_detail=f"never reached the service ({row.last_detail})",
                )
            )
        else:
            if row.lookups and row.last_lookup_at is not None:
                wait = row.last_lookup_at + ctx.policy.lookup_interval_s - now
                if not await ctx.pause(wait, deadline):
                    return row
            _report(progress, row, "checking_history", started, row.last_detail or "")
            row = await check_history(ctx, row)
            if row.state is IntentState.ABANDONED and row.tx_id is not None:
                return row
        if time.monotonic() >= deadline:
            return row
    return row
