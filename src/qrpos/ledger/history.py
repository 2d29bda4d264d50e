"""Looking in the terminal's history: an intent's window, and the rows found in it.

The window is placed on the server's clock (`qrpos.ledger.clock`); what the rows prove is
decided in `qrpos.ledger.claims`, never here. Every page's `Date` measures the clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from qrpos.ledger.claims import STAMPS_AHEAD_S, Window
from qrpos.ledger.clock import DATE_RESOLUTION_S, ClockReading, offset_from
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.records import IntentRow
from qrpos.service import Page, TerminalClient, Transaction, Unresolved
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


def _shared_offsets(
    row: IntentRow, reading: ClockReading | None, policy: RetryPolicy
) -> tuple[float, float] | None:
    """The offsets the kiosk's stored reading vouches for during this intent, if any."""
    if reading is None:
        return None
    first = row.first_sent_at if row.first_sent_at is not None else row.created_at
    last = max(row.last_end_at or first, row.last_sent_at or first)
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
    top = None if reading is None else reading.high_date
    if top is not None and start < top <= stop + STAMPS_AHEAD_S:
        # the sale began while the service's clock was behind the latest it was ever seen
        # at: after stepping back it stamps commits at that high-water mark until it has
        # caught up (counted on the service's own clock, which the kiosk's steps never move)
        stop = max(stop, top + margin)
    return Window(
        start=datetime.fromtimestamp(start, UTC),
        end=datetime.fromtimestamp(stop, UTC),
        measured=offsets is not None,
    )


async def look_up(client: TerminalClient, span: Window, now: Callable[[], float]) -> Sighting:
    """Every row of the span (all pages), and the server's clock from the first page.

    A listing that does not add up is a failed look-up, never rows to judge: a cursor that
    comes back (a loop), more than `MAX_PAGES` pages, or one id listed twice with different
    contents. An id listed twice alike counts once (a repeat is not a second charge).
    """
    rows: dict[str, Transaction] = {}
    offset: float | None = None
    measured_at = now()
    cursor: str | None = None
    trail = CursorTrail(MAX_PAGES)
    while True:
        sent = now()
        outcome = await client.list_page(
            from_=span.start, to=span.end, limit=PAGE_LIMIT, cursor=cursor
        )
        end = now()
        if offset is None:
            offset = offset_from(outcome.exchange.server_date, sent, end)
            measured_at = end
        if not isinstance(outcome, Page):
            return Sighting(span, (), offset, measured_at, failure=outcome)
        for tx in outcome.page.transactions:
            if rows.setdefault(tx.id, tx) != tx:
                twice = f"garbled history: {tx.id} listed twice with different contents"
                return _failed(span, offset, measured_at, twice, outcome)
        cursor = outcome.page.next_cursor
        if not cursor:
            return Sighting(span, tuple(rows.values()), offset, measured_at)
        if (endless := trail.follow(cursor)) is not None:
            return _failed(span, offset, measured_at, endless, outcome)


def _failed(
    span: Window, offset: float | None, measured_at: float, why: str, outcome: Page
) -> Sighting:
    return Sighting(
        span, (), offset, measured_at, failure=Unresolved(reason=why, exchange=outcome.exchange)
    )
