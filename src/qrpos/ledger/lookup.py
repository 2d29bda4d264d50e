"""One look at the history for an intent, judged by the claims model and committed.

The look-up reads the rows of the intent's window (widened while the server's clock is
unmeasured); its `Date` measures the clock; `qrpos.ledger.claims` says what the rows
prove; the conclusion, the clock and any foreign rows are committed in one transaction.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Sequence

from qrpos.ledger import clock, records, reviews
from qrpos.ledger.claims import (
    UNMEASURED,
    UNVERIFIED_CONFLICT,
    Claimant,
    Disputed,
    NoCandidate,
    Proven,
    Window,
    could_claim,
    foreign_rows,
    judge,
    owns_for_good,
)
from qrpos.ledger.context import Context
from qrpos.ledger.history import (
    Sighting,
    look_up,
    offsets_for,
    own_offsets,
    spanning,
    window_for,
)
from qrpos.ledger.records import IntentChanges, IntentRow
from qrpos.ledger.states import IntentState
from qrpos.ledger.timing import Moment, absence, confirm_by_key, settled
from qrpos.service import CredentialsRejected

#: what an intent ends as when the service answered its key and the history shows nothing
_ABSENT_STATE = {
    "declined": IntentState.DECLINED,
    "refused": IntentState.REFUSED,
}
#: a 409 to a same-key retry ("not_charged" is how older outboxes stored it): a review
_VERIFY = ("review", "not_charged")


def _neighbours(
    conn: sqlite3.Connection, span: Window, offset: float, tx_ids: Sequence[str]
) -> list[IntentRow]:
    """Intents that could matter to rows of `span`: every unsettled one, those near it in
    local time, and those that hold one of its rows (whatever their clock said then)."""
    slack = 3600.0  # local times of intents near the span, whatever their own offset was
    lo = span.start.timestamp() - offset - slack
    hi = span.end.timestamp() - offset + slack
    marks = ", ".join("?" for _ in tx_ids) or "NULL"
    # the placeholders are ours; the values go through parameters
    where = f"charged IS NULL OR created_at BETWEEN ? AND ? OR tx_id IN ({marks})"
    sql = f"SELECT id FROM charge_intent WHERE {where}"  # noqa: S608
    rows = conn.execute(sql, (lo, hi, *tx_ids)).fetchall()
    found = [records.get_intent(conn, int(r[0])) for r in rows]
    return [r for r in found if r is not None]


def _known(conn: sqlite3.Connection, tx_ids: Sequence[str]) -> set[str]:
    """Which of these rows the outbox accounts for: owned by an intent or refunded by us."""
    if not tx_ids:
        return set()
    marks = ", ".join("?" for _ in tx_ids)
    # the placeholders are ours; the ids go through parameters
    owned = conn.execute(
        f"SELECT tx_id FROM charge_intent WHERE tx_id IN ({marks})",  # noqa: S608
        tuple(tx_ids),
    ).fetchall()
    refunded = conn.execute(
        f"SELECT tx_id FROM reversal WHERE tx_id IN ({marks})",  # noqa: S608
        tuple(tx_ids),
    ).fetchall()
    return {str(r[0]) for r in (*owned, *refunded)}


def _conclude(
    ctx: Context, conn: sqlite3.Connection, row: IntentRow, seen: Sighting, looked_at: Moment
) -> tuple[IntentChanges, str]:
    """Judge the sighting for `row` inside the commit; returns the changes and an audit word."""
    policy = ctx.policy
    before = clock.read(conn)
    agreed = True
    skew: IntentChanges = {}
    if seen.offset_s is not None:
        placed = window_for(row, policy, before)
        if placed.measured:
            # the look-up's own Date must agree with the clock its window was placed on
            lo, hi = offsets_for(row, before, policy) or (0.0, 0.0)
            tolerance = policy.window_margin_s
            agreed = lo - tolerance <= seen.offset_s <= hi + tolerance
        if own_offsets(row) is not None:
            lo, hi = spanning(row, before, policy, seen.offset_s)
            skew = {"skew_lo_s": lo, "skew_hi_s": hi}
            row = dataclasses.replace(row, skew_lo_s=lo, skew_hi_s=hi)
        clock.observe(conn, seen.offset_s, seen.measured_at, policy.window_margin_s)
    reading = clock.read(conn)
    window = window_for(row, policy, reading)
    if not seen.span.covers(window):
        # the clock moved since the span was placed: part of the window went unseen, so
        # neither proof nor absence can be had from this look; the next one uses the new clock
        return skew, "clock_moved"
    changes, word = _judged(ctx, conn, row, seen, looked_at, reading, window, agreed)
    return {**skew, **changes}, word


def _judged(
    ctx: Context,
    conn: sqlite3.Connection,
    row: IntentRow,
    seen: Sighting,
    looked_at: Moment,
    reading: clock.ClockReading | None,
    window: Window,
    agreed: bool,
) -> tuple[IntentChanges, str]:
    """What the rows of a look-up that saw the whole window prove for `row`."""
    policy, now = ctx.policy, ctx.now()
    if seen.rows:
        clock.learn_terminal_id(conn, seen.rows[0].terminal_id, ctx.client.username)
    offset = reading.offset_s if reading else 0.0
    neighbours = _neighbours(conn, seen.span, offset, [tx.id for tx in seen.rows])
    # a sale in review holds the rows its review offers (and may own any of its amount)
    offered = reviews.offered_rows(conn)
    claimants = [
        Claimant(
            n.id,
            n.amount_mnt,
            window_for(n, policy, reading),
            n.tx_id,
            offered.get(n.id, frozenset()),
        )
        for n in neighbours
        if could_claim(n) and n.id != row.id
    ]
    owned = {n.tx_id for n in neighbours if n.tx_id and owns_for_good(n) and n.id != row.id}
    # another install's rows stay its own after the owner cleared the warning
    owned |= reviews.foreign_ids(conn, [tx.id for tx in seen.rows])
    me = Claimant(row.id, row.amount_mnt, window)
    if window.measured:
        in_window = [tx for tx in seen.rows if window.contains(tx.created_at)]
        known = _known(conn, [tx.id for tx in in_window])
        strangers = foreign_rows(in_window, [me, *claimants], known)
        surplus = {tx.id for tx in strangers if any(c.could_own(tx) for c in [me, *claimants])}
        reviews.record_foreign(conn, strangers, row.id, now, surplus)
    watching = row.state is IntentState.ABANDONED
    verdict = judge(
        me,
        seen.rows,
        claimants,
        owned,
        foreign_active=reviews.foreign_activity(conn) is not None,
        abandoned=watching,
        foreign_until=reviews.foreign_suspect_until(conn),
    )
    if isinstance(verdict, Proven) and confirm_by_key(row, policy, looked_at):
        return {
            "matched_at": now,
            "last_detail": f"{verdict.transaction.id} in the history may be this sale: "
            "asking the service with the same key first",
        }, "confirm_by_key"
    if isinstance(verdict, Proven):
        tx = verdict.transaction
        found: IntentChanges = {
            "tx_id": tx.id,
            "tx_json": json.dumps(tx.to_json(), sort_keys=True),
            "charged": 1,
            "proof": "history",
        }
        if watching:
            found["last_detail"] = f"found charged as {tx.id} after abandon: refunding"
        else:
            found.update(
                {
                    "state": IntentState.CHARGED_PER_HISTORY,
                    "token": None,
                    "resolved_at": now,
                    "last_detail": f"found in the history as {tx.id}",
                }
            )
        return found, "proof"
    if isinstance(verdict, Disputed) and not settled(policy, row, looked_at):
        # a slow request may still commit: the review would offer the rows of now, without
        # the sale's own; a person decides once late commits had their time
        return {}, "disputed_unsettled"
    if isinstance(verdict, Disputed):
        reviews.open_review(conn, row.id, verdict.reason, verdict.candidates, now)
        ids = ", ".join(c.transaction.id for c in verdict.candidates[:5])
        count = len(verdict.candidates)
        return {
            "state": IntentState.NEEDS_REVIEW,
            "token": None,
            "watching": 0,
            "may_resend": 0,
            "resolved_at": now,
            "last_detail": f"{verdict.reason}: {count} matching charge{'s' * (count > 1)} "
            f"in the history ({ids}); a person must decide",
        }, verdict.reason
    assert isinstance(verdict, NoCandidate)
    verdict_on_absence = absence(policy, row, looked_at, measured=window.measured, agreed=agreed)
    if verdict_on_absence == "final" and row.if_absent in _VERIFY:
        reviews.open_review(conn, row.id, UNVERIFIED_CONFLICT, (), now)
        return {
            "state": IntentState.NEEDS_REVIEW,
            "token": None,
            "watching": 0,
            "may_resend": 0,
            "resolved_at": now,
            "last_detail": f"{UNVERIFIED_CONFLICT}: a retry with the same key got 409 after "
            "an unclear attempt and the history shows no matching charge; a person must "
            "decide",
        }, UNVERIFIED_CONFLICT
    if verdict_on_absence == "unmeasured":
        reviews.open_review(conn, row.id, UNMEASURED, (), now)
        return {
            "state": IntentState.NEEDS_REVIEW,
            "token": None,
            "watching": 0,
            "may_resend": 0,
            "resolved_at": now,
            "last_detail": f"{UNMEASURED}: no matching charge, but the server's clock at the "
            "time of the sale is unknown; a person must decide",
        }, UNMEASURED
    if verdict_on_absence == "wait":
        return {}, "no_candidate" if window.measured else "no_candidate_unmeasured_clock"
    if watching:
        return {
            "watching": 0,
            "charged": 0,
            "resolved_at": now,
            "last_detail": "abandoned; the history shows it was not charged",
        }, "absent"
    return {
        "state": _ABSENT_STATE.get(row.if_absent or "", IntentState.NOT_CHARGED),
        "charged": 0,
        "token": None,
        "resolved_at": now,
        "last_detail": "the history shows no such charge: not charged",
    }, "absent"


async def check_history(ctx: Context, row: IntentRow) -> IntentRow:
    """One look at the history for `row`; commits what the claims model concluded."""
    reading = await ctx.ledger.aread(clock.read)
    # a little wider than the window: a fresh measurement's jitter must not uncover it
    span = window_for(row, ctx.policy, reading).widened(ctx.policy.window_margin_s)
    looked_at = ctx.moment()
    seen = await look_up(ctx.client, span, ctx.now)

    def commit(conn: sqlite3.Connection) -> IntentRow:
        current = records.get_intent(conn, row.id)
        assert current is not None
        changes: IntentChanges = {"lookups": current.lookups + 1, "last_lookup_at": ctx.now()}
        if seen.failure is not None:
            if seen.offset_s is not None:
                clock.observe(conn, seen.offset_s, seen.measured_at, ctx.policy.window_margin_s)
            outcome = type(seen.failure).__name__
            if isinstance(seen.failure, CredentialsRejected) and current.state is not (
                IntentState.ABANDONED
            ):
                changes.update(
                    {
                        "state": IntentState.CREDENTIALS_REJECTED,
                        "last_detail": "credentials rejected (401) while checking the history",
                    }
                )
        else:
            changes["answered_lookups"] = current.answered_lookups + 1
            concluded, outcome = _conclude(ctx, conn, current, seen, looked_at)
            changes.update(concluded)
        records.log_attempt(
            conn,
            kind="lookup",
            n=current.lookups + 1,
            sent_at=looked_at.wall,
            intent_id=row.id,
            elapsed_s=seen.measured_at - looked_at.wall,
            outcome=outcome,
            detail=changes.get("last_detail"),
            server_date=None if seen.offset_s is None else seen.measured_at + seen.offset_s,
        )
        return records.update_intent(conn, row.id, **changes)

    return await ctx.ledger.awrite(commit)
