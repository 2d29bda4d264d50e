"""One look at the history for an intent: its window, the rows found in it, judged by the
claims model and committed.

The window is placed on the server's clock as measured (`qrpos.ledger.states.ClockReading`),
widened while that clock is unmeasured; every page's `Date` measures the clock again.
`qrpos.ledger.claims` says what the rows prove, never this module; the conclusion, the
clock and any foreign rows are committed in one transaction.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from qrpos.ledger import reviews_sql, sales_sql, service_sql
from qrpos.ledger.claims import (
    UNMEASURED,
    UNVERIFIED_CONFLICT,
    Claimant,
    Disputed,
    NoCandidate,
    Proven,
    Window,
    candidates_json,
    could_claim,
    foreign_rows,
    judge,
    owns_for_good,
)
from qrpos.ledger.context import Context
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.reply_checks import STAMPS_AHEAD_S
from qrpos.ledger.states import (
    DATE_RESOLUTION_S,
    ClockReading,
    IntentChanges,
    IntentRow,
    IntentState,
    Moment,
    frame_of,
    in_frame,
    offset_from,
)
from qrpos.ledger.timing import absence, burst_spent, confirm_by_key, settled
from qrpos.ledger.typed_rows import Connection
from qrpos.said import Said, say
from qrpos.service import CredentialsRejected, Page, TerminalClient, Transaction, Unresolved
from qrpos.service.limits import CursorTrail
from qrpos.service.outcomes import ListOutcome

#: what an intent ends as when the service answered its key and the history shows nothing
_ABSENT_STATE = {
    "declined": IntentState.DECLINED,
    "refused": IntentState.REFUSED,
}
#: a 409 to a same-key retry ("not_charged" is how older outboxes stored it): a review
_VERIFY = ("review", "not_charged")

#: rows per page of a look-up (the spec's maximum)
PAGE_LIMIT = 1000
#: pages one look-up reads at most: a sale's window holds a page or two of this terminal's
#: charges; a service whose cursors never end must not hold the outbox (and the event loop)
MAX_PAGES = 100


@dataclass(frozen=True)
class Sighting:
    """What one look at the history saw: every row in the span, and the clock it measured."""

    span: Window
    rows: tuple[Transaction, ...]
    #: server − local measured from the first page's `Date` (None: no `Date`, no answer)
    offset_s: float | None
    #: local time the measurement was taken
    measured_at: float
    failure: ListOutcome | None = None
    #: the boot and boot clock of `measured_at` (its wall-clock frame), when known
    boot: str | None = None
    up: float | None = None

    @property
    def moment(self) -> Moment:
        """When the measurement was taken, on both clocks."""
        return Moment(self.measured_at, self.boot, self.up)


def offsets_for(
    row: IntentRow, reading: ClockReading | None, policy: RetryPolicy
) -> tuple[float, float] | None:
    """The range of server clock offsets to trust for this intent, or None when unknown.

    The range spans every offset the intent's own exchanges measured and, when trusted for
    it, the kiosk's reading: after a jump the measurements disagree, and the charge may
    carry either clock (a service's commit times never go back when its clock does).
    """
    own = own_offsets(row)
    shared = _shared_offsets(row, reading, policy)
    if own is None or shared is None:
        known = own or shared
    else:
        known = min(own[0], shared[0]), max(own[1], shared[1])
    # a service clock that went back stamps commits at its old high-water mark until it
    # has caught up: `window_for` reaches that mark, kept on the service's own clock (a
    # mark kept against local time was moved by every step of the kiosk's clock)
    return known


def own_offsets(row: IntentRow) -> tuple[float, float] | None:
    """The offsets measured by the `Date` of this intent's own responses, if any."""
    if row.skew_lo_s is not None and row.skew_hi_s is not None:
        return row.skew_lo_s, row.skew_hi_s
    if row.clock_skew_s is not None:
        return row.clock_skew_s, row.clock_skew_s
    return None


def spanning(
    row: IntentRow, reading: ClockReading | None, policy: RetryPolicy, offset_s: float
) -> tuple[float, float]:
    """The intent's offset range once a new measurement of its own (`offset_s`) is added."""
    known = offsets_for(row, reading, policy)
    if known is None:
        return offset_s, offset_s
    return min(known[0], offset_s), max(known[1], offset_s)


def sale_frame(row: IntentRow) -> tuple[str, float] | None:
    """The wall-clock frame the sale's first send was stamped in (`states.frame_of`)."""
    first = row.first_sent_at if row.first_sent_at is not None else row.created_at
    return frame_of(first, row.first_sent_boot, row.first_sent_up)


def measured_for(row: IntentRow, offset_s: float, at: Moment) -> float:
    """An offset measured at `at` for this sale, moved into the sale's own frame: the wall
    clock NTP stepped since the sale was sent does not move the window (the service's
    clock did not change)."""
    return in_frame(offset_s, frame_of(at.wall, at.boot, at.up), sale_frame(row))


def _shared_offsets(
    row: IntentRow, reading: ClockReading | None, policy: RetryPolicy
) -> tuple[float, float] | None:
    """The offsets the kiosk's stored reading vouches for during this intent, if any."""
    if reading is None:
        return None
    first = row.first_sent_at if row.first_sent_at is not None else row.created_at
    last = max(row.last_end_at or first, row.last_sent_at or first)
    framed = _shared_in_frame(row, reading, policy, first, last)
    if framed is not False:
        return framed
    now = reading.offset_s
    before, since = reading.previous_s, reading.previous_since
    if reading.measured_at < first:
        # the wall clock went back since the sale (a Pi rebooted onto an old saved time, or
        # NTP stepped it): local times of before and after are not comparable, so the sale
        # may carry either offset of the last jump
        if reading.jumped and before is not None:
            return min(before, now), max(before, now)
        return None
    if reading.stable_since <= first:
        return now, now  # the offset has held since before the sale
    if not reading.jumped:
        if first - policy.clock_fresh_s <= reading.measured_at <= last + policy.clock_fresh_s:
            return now, now  # the first measurement ever, taken close to the sale
        return None
    if before is not None and since is not None and since <= first:
        return min(before, now), max(before, now)  # the jump came before or after it
    return None


def _shared_in_frame(
    row: IntentRow, reading: ClockReading, policy: RetryPolicy, first: float, last: float
) -> tuple[float, float] | Literal[False] | None:
    """`_shared_offsets` on the boot clock, with the reading's offsets moved into the sale's
    frame; False when the reading and the sale are not on one boot (or either lacks the
    stamps), and only the wall clock can compare them.

    NTP steps the wall clock by hours on a Pi: compared in wall time, a reading stamped
    while the clock was stepped back claims to have held "before" sales made after it, and
    the step itself reads as a jump of the service's clock that widens every window by the
    step. On the boot clock neither happens."""
    sale = sale_frame(row)
    measured_up = reading.measured_up
    if (
        sale is None
        or reading.boot != sale[0]
        or measured_up is None
        or reading.frame_s is None
        or reading.stable_up is None
        or row.first_sent_up is None
    ):
        return False
    first_up = row.first_sent_up
    last_up = first_up + max(0.0, last - first)
    if row.unclear_end_up is not None and row.unclear_end_boot == sale[0]:
        last_up = max(last_up, row.unclear_end_up)
    now = in_frame(reading.offset_s, (sale[0], reading.frame_s), sale)
    before = reading.previous_s
    if before is not None and reading.previous_frame_s is not None:
        before = in_frame(before, (sale[0], reading.previous_frame_s), sale)
    if measured_up < first_up - 1e-3:  # (derived from a frame: allow for rounding)
        # measured before the sale (on the boot clock, which never steps): it does not
        # vouch for the sale's time, and any jump it knows of came before the sale. The
        # sale's own exchanges and its look-ups measure it
        return None
    if reading.stable_up < first_up:
        return now, now  # the offset has held since before the sale
    if not reading.jumped:
        fresh = policy.clock_fresh_s
        if first_up - fresh <= measured_up <= last_up + fresh:
            return now, now  # the first measurement ever, taken close to the sale
        return None
    if before is not None and reading.previous_up is not None and reading.previous_up < first_up:
        return min(before, now), max(before, now)  # the jump came before or after it
    return None


def window_for(row: IntentRow, policy: RetryPolicy, reading: ClockReading | None) -> Window:
    """The server-time span in which this intent's charge, if any, was committed."""
    first = row.first_sent_at if row.first_sent_at is not None else row.created_at
    last_sent = row.last_sent_at if row.last_sent_at is not None else first
    # never before the first send: a wall clock stepped back mid-sale stamps later requests
    # "earlier" (the offsets measured then carry the step, so the window stays wide enough)
    end = max(row.last_end_at or last_sent, last_sent, first) + policy.settle_s
    margin = policy.window_margin_s + DATE_RESOLUTION_S
    offsets = offsets_for(row, reading, policy)
    if offsets is None:
        low, high = -policy.max_clock_skew_s, policy.max_clock_skew_s
    else:
        low, high = offsets
    start, stop = first + low - margin, end + high + margin
    top = None if reading is None else reading.back_mark
    if top is not None and start < top <= stop + STAMPS_AHEAD_S:
        # the sale began before a mark the service's clock was seen to fall behind: after
        # stepping back it stamps commits at that high-water mark until it has caught up
        # (counted on the service's own clock, which the kiosk's steps never move). Only a
        # mark seen gone back counts: the latest time ever seen is "now", and reaching it
        # would let every open sale of a price own every later row of that price
        stop = max(stop, top + margin)
    return Window(
        start=datetime.fromtimestamp(start, UTC),
        end=datetime.fromtimestamp(stop, UTC),
        measured=offsets is not None,
    )


async def look_up(client: TerminalClient, span: Window, now: Callable[[], Moment]) -> Sighting:
    """Every row of the span (all pages), and the server's clock from the first page.

    A listing that does not add up is a failed look-up, never rows to judge: a cursor that
    comes back (a loop), more than `MAX_PAGES` pages, or one id listed twice with different
    contents. An id listed twice alike counts once (a repeat is not a second charge).
    """
    rows: dict[str, Transaction] = {}
    offset: float | None = None
    measured = now()
    cursor: str | None = None
    trail = CursorTrail(MAX_PAGES)

    def seen(found: tuple[Transaction, ...], failure: ListOutcome | None = None) -> Sighting:
        return Sighting(
            span, found, offset, measured.wall, failure, boot=measured.boot, up=measured.up
        )

    while True:
        sent = now().wall
        outcome = await client.list_page(
            from_=span.start, to=span.end, limit=PAGE_LIMIT, cursor=cursor
        )
        end = now()
        if offset is None:
            offset = offset_from(outcome.exchange.server_date, sent, end.wall)
            measured = end
        if not isinstance(outcome, Page):
            return seen((), outcome)
        for tx in outcome.page.transactions:
            if rows.setdefault(tx.id, tx) != tx:
                twice = f"garbled history: {tx.id} listed twice with different contents"
                return seen((), Unresolved(reason=twice, exchange=outcome.exchange))
        cursor = outcome.page.next_cursor
        if not cursor:
            return seen(tuple(rows.values()))
        if (endless := trail.follow(cursor)) is not None:
            return seen((), Unresolved(reason=endless, exchange=outcome.exchange))


def _neighbours(
    conn: Connection, span: Window, offset: float, tx_ids: Sequence[str]
) -> list[IntentRow]:
    """Intents that could matter to rows of `span`: every unsettled one, those near it in
    local time, and those that hold one of its rows (whatever their clock said then)."""
    slack = 3600.0  # local times of intents near the span, whatever their own offset was
    lo = span.start.timestamp() - offset - slack
    hi = span.end.timestamp() - offset + slack
    return sales_sql.neighbours(conn, lo, hi, tx_ids)


def _conclude(
    ctx: Context, conn: Connection, row: IntentRow, seen: Sighting, looked_at: Moment
) -> tuple[IntentChanges, str]:
    """Judge the sighting for `row` inside the commit; returns the changes and an audit word."""
    policy = ctx.policy
    before = service_sql.read_clock(conn)
    agreed = True
    skew: IntentChanges = {}
    if seen.offset_s is not None:
        # in the sale's own frame: NTP's steps of the kiosk's clock since are taken out
        offset = measured_for(row, seen.offset_s, seen.moment)
        placed = window_for(row, policy, before)
        if placed.measured:
            # the look-up's own Date must agree with the clock its window was placed on
            lo, hi = offsets_for(row, before, policy) or (0.0, 0.0)
            tolerance = policy.window_margin_s
            agreed = lo - tolerance <= offset <= hi + tolerance
        if own_offsets(row) is not None:
            lo, hi = spanning(row, before, policy, offset)
            skew = {"skew_lo_s": lo, "skew_hi_s": hi}
            row = dataclasses.replace(row, skew_lo_s=lo, skew_hi_s=hi)
        service_sql.observe(
            conn, seen.offset_s, seen.measured_at, policy.window_margin_s, seen.boot, seen.up
        )
    reading = service_sql.read_clock(conn)
    window = window_for(row, policy, reading)
    if not seen.span.covers(window):
        # the clock moved since the span was placed: part of the window went unseen, so
        # neither proof nor absence can be had from this look; the next one uses the new clock
        return skew, "clock_moved"
    changes, word = _judged(ctx, conn, row, seen, looked_at, reading, window, agreed)
    return {**skew, **changes}, word


def _judged(
    ctx: Context,
    conn: Connection,
    row: IntentRow,
    seen: Sighting,
    looked_at: Moment,
    reading: ClockReading | None,
    window: Window,
    agreed: bool,
) -> tuple[IntentChanges, str]:
    """What the rows of a look-up that saw the whole window prove for `row`."""
    policy, now = ctx.policy, ctx.now()
    if seen.rows:
        service_sql.learn_terminal_id(conn, seen.rows[0].terminal_id, ctx.client.username)
    offset = reading.offset_s if reading else 0.0
    neighbours = _neighbours(conn, seen.span, offset, [tx.id for tx in seen.rows])
    # a sale in review holds the rows its review offers (and may own any of its amount)
    offered = reviews_sql.offered_rows(conn)
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
    owned |= service_sql.foreign_ids(conn, [tx.id for tx in seen.rows])
    me = Claimant(row.id, row.amount_mnt, window)
    if window.measured:
        in_window = [tx for tx in seen.rows if window.contains(tx.created_at)]
        known = sales_sql.known_tx(conn, [tx.id for tx in in_window])
        strangers = foreign_rows(in_window, [me, *claimants], known)
        surplus = {tx.id for tx in strangers if any(c.could_own(tx) for c in [me, *claimants])}
        service_sql.record_foreign(conn, strangers, row.id, now, surplus)
    watching = row.state is IntentState.ABANDONED
    verdict = judge(
        me,
        seen.rows,
        claimants,
        owned,
        foreign_active=bool(service_sql.uncleared_foreign(conn)),
        abandoned=watching,
        foreign_until=service_sql.foreign_suspect_until(conn),
    )
    if isinstance(verdict, Proven) and confirm_by_key(row, policy, looked_at):
        return {
            "matched_at": now,
            "last_detail": say(
                "sale.confirm_by_key",
                "{id} in the history may be this sale: asking the service with the same key first",
                id=verdict.transaction.id,
            ),
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
            found["last_detail"] = say(
                "sale.found_after_abandon",
                "found charged as {id} after abandon: refunding",
                id=tx.id,
            )
        else:
            found.update(
                {
                    "state": IntentState.CHARGED_PER_HISTORY,
                    "token": None,
                    "resolved_at": now,
                    "last_detail": say(
                        "sale.found_in_history", "found in the history as {id}", id=tx.id
                    ),
                }
            )
        return found, "proof"
    if isinstance(verdict, Disputed) and not settled(policy, row, looked_at):
        # a slow request may still commit: the review would offer the rows of now, without
        # the sale's own; a person decides once late commits had their time
        return {}, "disputed_unsettled"
    if isinstance(verdict, Disputed):
        reviews_sql.upsert_review(
            conn, row.id, verdict.reason, candidates_json(verdict.candidates), now
        )
        ids = ", ".join(c.transaction.id for c in verdict.candidates[:5])
        count = len(verdict.candidates)
        return {
            "state": IntentState.NEEDS_REVIEW,
            "token": None,
            "watching": 0,
            "may_resend": 0,
            "resolved_at": now,
            "last_detail": say(
                "sale.disputed",
                "{reason}: {count} matching charge"
                + ("s" if count > 1 else "")
                + " in the history ({ids}); a person must decide",
                reason=verdict.reason,
                count=count,
                ids=ids,
            ),
        }, verdict.reason
    assert isinstance(verdict, NoCandidate)
    verdict_on_absence = absence(policy, row, looked_at, measured=window.measured, agreed=agreed)
    if verdict_on_absence == "final" and row.if_absent in _VERIFY:
        reviews_sql.upsert_review(conn, row.id, UNVERIFIED_CONFLICT, "[]", now)
        return {
            "state": IntentState.NEEDS_REVIEW,
            "token": None,
            "watching": 0,
            "may_resend": 0,
            "resolved_at": now,
            "last_detail": say(
                "sale.unverified_conflict",
                UNVERIFIED_CONFLICT + ": a retry with the same key got 409 after an unclear "
                "attempt and the history shows no matching charge; a person must decide",
            ),
        }, UNVERIFIED_CONFLICT
    if verdict_on_absence == "unmeasured":
        reviews_sql.upsert_review(conn, row.id, UNMEASURED, "[]", now)
        return {
            "state": IntentState.NEEDS_REVIEW,
            "token": None,
            "watching": 0,
            "may_resend": 0,
            "resolved_at": now,
            "last_detail": say(
                "sale.unmeasured",
                UNMEASURED + ": no matching charge, but the server's clock at the time of "
                "the sale is unknown; a person must decide",
            ),
        }, UNMEASURED
    if verdict_on_absence == "wait":
        return {}, "no_candidate" if window.measured else "no_candidate_unmeasured_clock"
    if watching:
        return {
            "watching": 0,
            "charged": 0,
            "resolved_at": now,
            "last_detail": say(
                "sale.abandoned_absent", "abandoned; the history shows it was not charged"
            ),
        }, "absent"
    return {
        "state": _ABSENT_STATE.get(row.if_absent or "", IntentState.NOT_CHARGED),
        "charged": 0,
        "token": None,
        "resolved_at": now,
        "last_detail": say("sale.absent", "the history shows no such charge: not charged"),
    }, "absent"


async def check_history(ctx: Context, row: IntentRow) -> IntentRow:
    """One look at the history for `row`; commits what the claims model concluded."""
    reading = await ctx.ledger.aread(service_sql.read_clock)
    # a little wider than the window: a fresh measurement's jitter must not uncover it
    span = window_for(row, ctx.policy, reading).widened(ctx.policy.window_margin_s)
    looked_at = ctx.moment()
    seen = await look_up(ctx.client, span, ctx.moment)

    def commit(conn: Connection) -> IntentRow:
        current = sales_sql.get_intent(conn, row.id)
        assert current is not None
        changes: IntentChanges = {"lookups": current.lookups + 1, "last_lookup_at": ctx.now()}
        if seen.failure is not None:
            if seen.offset_s is not None:
                service_sql.observe(
                    conn,
                    seen.offset_s,
                    seen.measured_at,
                    ctx.policy.window_margin_s,
                    seen.boot,
                    seen.up,
                )
            outcome = type(seen.failure).__name__
            if isinstance(seen.failure, CredentialsRejected) and current.state is not (
                IntentState.ABANDONED
            ):
                changes.update(
                    {
                        "state": IntentState.CREDENTIALS_REJECTED,
                        "last_detail": say(
                            "sale.credentials_rejected_lookup",
                            "credentials rejected (401) while checking the history",
                        ),
                    }
                )
        else:
            if burst_spent(current, ctx.policy):  # an answered look-up earns one more send
                changes["answered_lookups"] = current.answered_lookups + 1
            concluded, outcome = _conclude(ctx, conn, current, seen, looked_at)
            changes.update(concluded)
        service_sql.log_attempt(
            conn,
            kind="lookup",
            n=current.lookups + 1,
            sent_at=looked_at.wall,
            intent_id=row.id,
            elapsed_s=seen.measured_at - looked_at.wall,
            outcome=outcome,
            detail=_audit_detail(changes.get("last_detail"), seen, current.amount_mnt),
            server_date=None if seen.offset_s is None else seen.measured_at + seen.offset_s,
        )
        return sales_sql.update_intent(conn, row.id, **changes)

    return await ctx.ledger.awrite(commit)


def _audit_detail(word: Said | None, seen: Sighting, amount_mnt: int) -> str | None:
    """A look-up's line in the audit trail: its conclusion, and the rows of the sale's
    amount it saw (which rows a verdict rested on is what a person, or the campaign's
    replay, needs to tell a misattribution from a proof)."""
    same = [tx for tx in seen.rows if tx.is_charge and tx.amount_mnt == amount_mnt]
    if seen.failure is not None and not same:
        return None if word is None else str(word)
    shown = ", ".join(f"{tx.id}@{tx.created_at.isoformat()}" for tx in same[:6])
    more = f" (+{len(same) - 6} more)" if len(same) > 6 else ""
    rows = f"{len(same)} row(s) of {amount_mnt} MNT seen: {shown or '-'}{more}"
    return rows if word is None else f"{word}; {rows}"
