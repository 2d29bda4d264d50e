"""One look at the history for an intent: its window, the rows found in it, judged by the
claims model and committed.

The window is placed on the server's clock as measured (`qrpos.ledger.clockreading.ClockReading`),
widened while that clock is unmeasured; every page's `Date` measures the clock again.
`qrpos.ledger.claims` says what the rows prove; this module adds only what the rows cannot
show (a row that another sale's refund holds is contested; one a refund made by hand holds
is its own event, `refund_queue.held_by_hand`), names the event (`verdict_event`) and applies
the table's move (`qrpos.ledger.moves`), choosing no state itself. The conclusion, the
clock and any foreign rows are committed in one transaction.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from qrpos.ledger import reviews_sql, sales_sql, service_sql
from qrpos.ledger.claims import (
    Candidate,
    Claimant,
    Disputed,
    Proven,
    Verdict,
    Window,
    candidates_json,
    could_claim,
    foreign_rows,
    judge,
    owns_for_good,
)
from qrpos.ledger.clockreading import (
    STAMPS_AHEAD_S,
    ClockReading,
    offset_from,
)
from qrpos.ledger.context import Context
from qrpos.ledger.events import Charged, Effect, Move, ReviewReason, SaleEvent
from qrpos.ledger.moves import absence_event, charged_value, dispute_event, sale_move
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.refund_queue import held_by_hand, refund_for_sale, refund_holder
from qrpos.ledger.states import (
    IntentChanges,
    IntentRow,
    IntentState,
    Moment,
    RefundReason,
)
from qrpos.ledger.timing import absence, burst_spent, confirm_by_key, match_rule, settled
from qrpos.ledger.typed_rows import Connection
from qrpos.ledger.verdict_words import AUDIT_WORDS, verdict_words
from qrpos.ledger.windows import (
    AHEAD_SLACK_S,
    listing_span,
    measured_for,
    offsets_for,
    own_offsets,
    spanning,
    window_for,
)
from qrpos.said import Said, say
from qrpos.service import CredentialsRejected, Page, TerminalClient, Transaction, Unresolved
from qrpos.service.limits import CursorTrail
from qrpos.service.outcomes import ListOutcome

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
    #: the newest commit stamp the history showed ahead of the service's own `Date`
    #: (epoch seconds on its clock), None when none was: `look_up`'s second page
    ahead: float | None = None
    #: where that second page began (the service's clock at the probe, plus the `Date`'s
    #: second and the round trip): no commit was stamped past it, or `ahead` says where
    #: (None: no probe answered)
    probed_from: float | None = None

    @property
    def moment(self) -> Moment:
        """When the measurement was taken, on both clocks."""
        return Moment(self.measured_at, self.boot, self.up)


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
            break
        if (endless := trail.follow(cursor)) is not None:
            return seen((), Unresolved(reason=endless, exchange=outcome.exchange))
    if offset is None:
        return seen(tuple(rows.values()))
    # A service whose clock stepped back stamps commits at its old high-water mark until
    # its clock catches up (its commit times never go back), and a kiosk that first met it
    # after the step never saw the mark: a charge of the sale may then lie far past the
    # window its `Date` placed. The newest row stamped ahead of the `Date` (newest first,
    # one row) is that mark, or a bound on it: `windows.window_for` reaches it (issue 47's
    # simulator, seed 74: an abandoned sale proven absent while its charge was stamped 600 s
    # past the window). A look that cannot ask is a failed look, never absence.
    # placed on the boot clock since the offset's measurement: NTP may step the wall
    # clock mid-look (a Pi's boot), and a probe an hour late would miss the mark (review 3)
    at = now()
    if at.up is not None and measured.up is not None and at.boot == measured.boot:
        server_now = measured.wall + offset + max(0.0, at.up - measured.up)
    else:
        server_now = at.wall + offset
    probed_from = server_now + AHEAD_SLACK_S
    probe = await client.list_page(
        from_=datetime.fromtimestamp(probed_from, UTC),
        to=datetime.fromtimestamp(server_now + STAMPS_AHEAD_S, UTC),
        limit=1,
    )
    if not isinstance(probe, Page):
        return seen((), probe)
    stamps = [tx.created_at.timestamp() for tx in probe.page.transactions]
    return dataclasses.replace(
        seen(tuple(rows.values())), ahead=max(stamps, default=None), probed_from=probed_from
    )


def _neighbours(
    conn: Connection, span: Window, offset: float, tx_ids: Sequence[str]
) -> list[IntentRow]:
    """Sales that could matter to rows of `span`: every one whose `charged` is unknown,
    those near it in local time, and those that hold one of its rows (whatever their clock
    said then)."""
    slack = 3600.0  # local times of intents near the span, whatever their own offset was
    lo = span.start.timestamp() - offset - slack
    hi = span.end.timestamp() - offset + slack
    return sales_sql.neighbours(conn, lo, hi, tx_ids)


def _conclude(
    ctx: Context, conn: Connection, row: IntentRow, seen: Sighting, looked_at: Moment
) -> tuple[IntentChanges, str, Move | None]:
    """Judge the sighting for `row` inside the commit; returns the changes, an audit word
    and the table's move it applied (None: the look proved nothing, no move)."""
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
    if seen.ahead is not None:
        service_sql.mark_stamps_ahead(conn, seen.ahead)
    probed_from = seen.probed_from if agreed and row.probed_to is None else None
    if probed_from is not None and settled(policy, row, looked_at):
        # the first look since late commits settled, its `Date` agreeing with the sale's
        # clock (a stale one places the probe short of the mark: review 5): no commit of
        # the sale is stamped past what its probe saw, though the service's clock may have
        # gone back and caught up unseen; the window reaches it (`windows.window_for`)
        probed = max(probed_from, seen.ahead or probed_from)
        skew = {**skew, "probed_to": probed}
        row = dataclasses.replace(row, probed_to=probed)
    reading = service_sql.read_clock(conn)
    window = window_for(row, policy, reading)
    if not seen.span.covers(window):
        # the clock moved since the span was placed: part of the window went unseen, so
        # neither proof nor absence can be had from this look; the next one uses the new clock
        return skew, "clock_moved", None
    if seen.offset_s is None and window.measured:
        # no `Date`: the look could not probe for rows stamped ahead of the service's clock
        # (`look_up`), so a charge stamped at a mark past the window may be unseen: its rows
        # may prove, its silence may not (review 3 of issue 47)
        agreed = False
    changes, word, move = _judged(ctx, conn, row, seen, looked_at, reading, window, agreed)
    return {**skew, **changes}, word, move


def _judged(
    ctx: Context,
    conn: Connection,
    row: IntentRow,
    seen: Sighting,
    looked_at: Moment,
    reading: ClockReading | None,
    window: Window,
    agreed: bool,
) -> tuple[IntentChanges, str, Move]:
    """What the rows of a look-up that saw the whole window prove for `row`, and the move."""
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
            in_review=n.state is IntentState.NEEDS_REVIEW,
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
    if isinstance(verdict, Proven):
        tx = verdict.transaction
        if (holder := refund_holder(conn, tx.id, besides=row.id)) is not None:
            # a row that a refund of another sale holds is that sale's: contested
            verdict = Disputed(ReviewReason.CONTESTED_ROW, (Candidate(tx, (holder,)),))
    event = verdict_event(verdict, row, policy, looked_at, window, agreed)
    if (
        isinstance(verdict, Proven)
        and event is SaleEvent.LOOKUP_PROVEN
        and match_rule(row, policy, looked_at) == "person"
    ):
        # the window alone pairs the row with the sale and its key cannot confirm it: the
        # row may be an unseen install's, so a person decides with it offered (issue 47).
        # Before a refund made by hand is weighed: a row the owner refunds by hand must not
        # make the sale charged on it, abandoned (review 3 of issue 47) or open (review 7:
        # an open sale was written charged on another install's row the owner refunded)
        verdict = Disputed(ReviewReason.UNCONFIRMED_ROW, (Candidate(verdict.transaction, ()),))
        event = dispute_event(verdict.reason, settled=settled(policy, row, looked_at))
    if isinstance(verdict, Proven):  # on a row refunded by hand: its own event, maybe a review
        verdict, event = held_by_hand(conn, row, verdict, event)
    move = sale_move(row.state, event)
    changes: IntentChanges = {}
    if move.next is not row.state:
        changes["state"] = IntentState(move.next)
    if move.charged is not Charged.KEEP:
        changes["charged"] = charged_value(move, row.charged)
    if move.charged in (Charged.YES, Charged.NO) or move.review is not None:
        changes["resolved_at"] = now
        if not watching or move.review is not None:
            changes["token"] = None
    if Effect.STOP_WATCHING in move.effects:
        changes["watching"] = 0
    if Effect.OPEN_REVIEW in move.effects and move.review is not None:
        changes["may_resend"] = 0
        shown = verdict.candidates if isinstance(verdict, Disputed) else ()
        reviews_sql.upsert_review(conn, row.id, move.review, candidates_json(shown), now)
    answered: IntentChanges = {}
    if isinstance(verdict, Proven) and Effect.REFUND in move.effects:
        # queued (or a refund made by hand attached) in the commit that proves it: a crash
        # before the refund goes out leaves it in the queue, never a charged sale nobody
        # refunds (`ChargeDesk` sends it); a refused one is queued again. A refund made by
        # hand that had already landed answers the sale as its move left it, now.
        proven = dataclasses.replace(
            row, state=IntentState(move.next), charged=changes.get("charged", row.charged)
        )
        _, answered = refund_for_sale(
            conn, tx_id=verdict.transaction.id, sale=proven, reason=RefundReason.ABANDONED, now=now
        )
    if isinstance(verdict, Proven) and event is not SaleEvent.LOOKUP_MATCH_TO_CONFIRM:
        tx = verdict.transaction
        changes.update(
            {
                "tx_id": tx.id,
                "tx_json": json.dumps(tx.to_json(), sort_keys=True),
                "proof": "history",
            }
        )
        if watching:
            changes.pop("resolved_at", None)  # resolved once its refund has landed
    changes.update(verdict_words(event, verdict, watching))
    if event is SaleEvent.LOOKUP_MATCH_TO_CONFIRM:
        changes["matched_at"] = now
        changes["matched_sends"] = row.attempts
    elif event is SaleEvent.LOOKUP_NOT_YET and row.matched_at is not None:
        # the match is gone (another sale of this till proved it its own): the key may
        # speak again, and confirms the next match anew
        changes["matched_at"] = None
        changes["matched_sends"] = None
    changes.update(answered)
    if event is SaleEvent.LOOKUP_NOT_YET and not window.measured:
        return changes, "no_candidate_unmeasured_clock", move
    return changes, AUDIT_WORDS.get(event, str(move.review or event)), move


def verdict_event(
    verdict: Verdict,
    row: IntentRow,
    policy: RetryPolicy,
    looked_at: Moment,
    window: Window,
    agreed: bool,
) -> SaleEvent:
    """The sale's event for what a look-up that saw the whole window found (`agreed`: its
    own `Date` agreed with the clock the window was placed on)."""
    if isinstance(verdict, Proven | Disputed) and confirm_by_key(row, policy, looked_at):
        # the key was never answered: it gets one send to speak before the rows decide
        return SaleEvent.LOOKUP_MATCH_TO_CONFIRM
    if isinstance(verdict, Proven):
        return SaleEvent.LOOKUP_PROVEN
    if isinstance(verdict, Disputed):
        return dispute_event(verdict.reason, settled=settled(policy, row, looked_at))
    word = absence(policy, row, looked_at, measured=window.measured, agreed=agreed)
    return absence_event(word, row.if_absent)


async def check_history(ctx: Context, row: IntentRow) -> tuple[IntentRow, Move | None]:
    """One look at the history for `row`; commits what the claims model concluded. Returns
    the sale as committed and the table's move the look applied (None: none), whose effects
    the drive carries out (`resolver.drive`: the till goes back on `answer_cashier`)."""
    reading = await ctx.ledger.aread(service_sql.read_clock)
    looked_at = ctx.moment()
    span = listing_span(row, ctx.policy, reading, looked_at, settled(ctx.policy, row, looked_at))
    seen = await look_up(ctx.client, span, ctx.moment)

    def commit(conn: Connection) -> tuple[IntentRow, Move | None]:
        current = sales_sql.get_intent(conn, row.id)
        assert current is not None
        changes: IntentChanges = {"lookups": current.lookups + 1, "last_lookup_at": ctx.now()}
        applied: Move | None
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
            rejected = isinstance(seen.failure, CredentialsRejected)
            event = SaleEvent.LOOKUP_CREDENTIALS_REJECTED if rejected else SaleEvent.LOOKUP_FAILED
            move = applied = sale_move(current.state, event)
            if move.next is not current.state:
                changes.update(
                    {
                        "state": IntentState(move.next),
                        "last_detail": say(
                            "sale.credentials_rejected_lookup",
                            "credentials rejected (401) while checking the history",
                        ),
                    }
                )
        else:
            if burst_spent(current, ctx.policy):  # an answered look-up earns one more send
                changes["answered_lookups"] = current.answered_lookups + 1
            concluded, outcome, applied = _conclude(ctx, conn, current, seen, looked_at)
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
        return sales_sql.update_intent(conn, row.id, **changes), applied

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
