"""Where a sale's charge may lie on the service's clock: its window, and the clock offsets
trusted for it.

Part of the ledger's sans-I/O decision core, beside `timing`: pure functions of the sale's
row, the kiosk's measured reading of the service's clock (`clockreading.ClockReading`) and the
limits. The window is placed on the measured clock; without a trusted measurement it
widens by `max_clock_skew_s` and is unmeasured (absence is never final on it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from qrpos.ledger.clockreading import (
    DATE_RESOLUTION_S,
    STAMPS_AHEAD_S,
    ClockReading,
    Window,
    frame_of,
    in_frame,
)
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import IntentRow, Moment


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
    """The wall-clock frame the sale's first send was stamped in (`clockreading.frame_of`)."""
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
    if row.probed_to is not None:
        # the service's `Date` when a look-up after the late commits first saw no row
        # stamped ahead: a commit of the sale stamped at a high-water mark the kiosk never
        # saw (its clock went back before the kiosk first asked, and caught up before the
        # kiosk could look: a dead network, a rotated password) is at or before it, since
        # the service's stamps never go back (issue 47's long run, seed 201758)
        stop = max(stop, row.probed_to + margin)
    return Window(
        start=datetime.fromtimestamp(start, UTC),
        end=datetime.fromtimestamp(stop, UTC),
        measured=offsets is not None,
    )


#: a row stamped this far past the `Date` is ahead of the service's clock: the `Date`'s
#: second, and the round trip a look-up may take
AHEAD_SLACK_S = DATE_RESOLUTION_S + 2.0
#: how much further than the service's clock a first look after late commits settled
#: lists: its probe, after the pages, bounds the window (the pages' time, the margins)
PROBE_REACH_S = 30.0


def listing_span(
    row: IntentRow,
    policy: RetryPolicy,
    reading: ClockReading | None,
    looked_at: Moment,
    settled: bool,
) -> Window:
    """The span a look-up at `looked_at` lists for `row`: its window, a little wider (a
    fresh measurement's jitter must not uncover it); on the first look after late commits
    `settled`, as far as that look's probe will bound the sale's commits (`probed_to`,
    which the window then reaches), or the look would prove nothing."""
    span = window_for(row, policy, reading).widened(policy.window_margin_s)
    if reading is None or row.probed_to is not None or not settled:
        return span
    reach = looked_at.wall + reading.offset_s + AHEAD_SLACK_S + PROBE_REACH_S
    return Window(span.start, max(span.end, datetime.fromtimestamp(reach, UTC)), span.measured)
