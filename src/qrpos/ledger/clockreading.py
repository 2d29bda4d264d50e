"""The service's clock, as measured from the `Date` of its replies: the reading the
ledger keeps, and how a measurement moves it.

Part of the ledger's sans-I/O decision core: pure functions of the measurements and the
stamps passed in (no clock is read here).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

# --- the service's clock, as measured from its replies' `Date` --------------------------
# A Pi without a real-time clock can boot minutes (or days) off; the history's `createdAt`
# is the server's clock. Every response's `Date` (charges, refunds and history pages alike)
# measures `offset = server − local`; the latest measurement is kept in the outbox with
# when it was taken and since when the offset has held (a jump of either clock resets that).
#
# A measurement is trusted for a sale when it is the sale's own (a response to one of its
# requests), or the offset has held since before the sale, or it is the first measurement
# ever and was taken close to the sale. After a jump, a sale from before it that has no
# measurement of its own gets a window that spans the offsets before and after the jump
# (the jump may have come before or after its requests); with two jumps since, it is
# unmeasured. A sale's window also spans every offset its own responses measured (a 409's
# and a 5xx's `Date` too, and its look-ups'): `qrpos.ledger.windows.offsets_for`. And since a
# service's commit times never go back when its clock does, the highest offset seen
# (`high_s`) stays in every window until the service's clock has had time to catch up with it.
# Without one the look-up window widens by `RetryPolicy.max_clock_skew_s`, and absence is
# never final (`qrpos.ledger.claims`).

#: the server's `Date` header has a resolution of one second (the true time is in [D, D+1))
DATE_RESOLUTION_S = 1.0
#: a slower exchange says too little about when the server stamped its `Date`
MAX_ROUND_TRIP_S = 2.0
#: a `Date` further than this from the kiosk's clock is garbage, not a measurement: a Pi
#: may boot at 1970, but a year-9999 (or year-1) `Date` would place windows out of range
MAX_OFFSET_S = 100 * 366 * 86_400.0


@dataclass(frozen=True)
class ClockReading:
    """The last measured offset of the server's clock (server − local, seconds)."""

    offset_s: float
    #: local time of the measurement (UTC epoch seconds)
    measured_at: float
    #: local time since which every measurement agreed with `offset_s`
    stable_since: float
    #: True when an earlier measurement disagreed (a clock jumped at some point before
    #: `stable_since`): then the offset is not known for anything before it
    jumped: bool = False
    #: the offset that held before the last jump, and since when (None: no jump known)
    previous_s: float | None = None
    previous_since: float | None = None
    #: the highest offset measured while the service's stamps may still be catching up with
    #: it (its commit times never go back when its clock does), and when it was last seen
    high_s: float | None = None
    high_at: float | None = None
    #: the latest the service's clock was ever seen at (epoch seconds on *its* clock, so
    #: stepping the kiosk's own clock cannot move it): commits are stamped no earlier
    #: than this until the service's clock passes it again
    high_date: float | None = None
    #: the boot the reading's boot-clock stamps below belong to (None: not known)
    boot: str | None = None
    #: wall − boot clock when `offset_s` was measured: the kiosk's wall-clock "frame". NTP
    #: stepping the wall clock changes the frame, not the service's clock, so an offset
    #: measured in one frame is moved into a sale's frame by the difference of the two
    #: (`in_frame`)
    frame_s: float | None = None
    #: the boot clock at `stable_since` (0.0: held since before this boot began)
    stable_up: float | None = None
    #: the boot clock at `previous_since`, and the frame `previous_s` was measured in
    #: (None: on another boot, or not known)
    previous_up: float | None = None
    previous_frame_s: float | None = None
    #: the highest mark the service's clock was *seen* to fall behind (epoch seconds on its
    #: own clock): a measurement read the clock earlier than one seen before, so commits
    #: were stamped at that mark until the clock passed it again. None: never seen going
    #: back (then no commit is stamped ahead of the service's clock)
    back_mark: float | None = None

    @property
    def measured_up(self) -> float | None:
        """The boot clock at `measured_at` (None when the frame is not known)."""
        return None if self.frame_s is None else self.measured_at - self.frame_s


def frame_of(wall: float, boot: str | None, up: float | None) -> tuple[str, float] | None:
    """A stamp's wall-clock frame (wall − boot clock) on its boot, or None without one."""
    if boot is None or up is None:
        return None
    return boot, wall - up


def in_frame(
    offset_s: float, measured: tuple[str, float] | None, sale: tuple[str, float] | None
) -> float:
    """`offset_s` (server − wall, measured in frame `measured`) as it reads in the sale's
    frame: NTP's steps of the wall clock between the two are taken out. Unchanged when
    either frame is unknown or they are on different boots (nothing says how the wall
    clock moved across a reboot)."""
    if measured is None or sale is None or measured[0] != sale[0]:
        return offset_s
    return offset_s + measured[1] - sale[1]


def plausible(server_date: datetime | None, local: float) -> datetime | None:
    """The `Date`, or None when it is more than `MAX_OFFSET_S` from the kiosk's clock."""
    if server_date is None or abs(server_date.timestamp() - local) > MAX_OFFSET_S:
        return None
    return server_date


def offset_from(server_date: datetime | None, sent_local: float, end_local: float) -> float | None:
    """server − local from one response's `Date`, taken against the request's midpoint.

    None without a `Date`, when the round trip was too slow to place it within a second, or
    when the `Date` is more than `MAX_OFFSET_S` from the kiosk's clock.
    """
    if server_date is None or not 0 <= end_local - sent_local <= MAX_ROUND_TRIP_S:
        return None
    offset = server_date.timestamp() + DATE_RESOLUTION_S / 2 - (sent_local + end_local) / 2
    return offset if abs(offset) <= MAX_OFFSET_S else None


def next_reading(
    old: ClockReading | None,
    offset_s: float,
    at: float,
    tolerance_s: float,
    boot: str | None = None,
    up: float | None = None,
) -> ClockReading:
    """The reading after a measurement of `offset_s` taken at local time `at` (boot clock
    `up` on `boot`, when known): a change beyond `tolerance_s` (or the kiosk's time going
    back) is a jump. The boot-clock stamps and frames let a sale compare the reading with
    its own times although NTP stepped the wall clock between them.

    On one boot, steadiness is judged on the boot clock (service − boot clock): a step of
    the kiosk's wall clock is no jump of the service's, and must not make every sale's
    window span the offsets before and after it."""
    same_boot = old is not None and boot is not None and old.boot == boot
    frame = None if boot is None or up is None else at - up
    old_up = None if old is None else old.measured_up
    if old is not None and same_boot and frame is not None and old_up is not None:
        assert up is not None and old.frame_s is not None
        service_now, service_then = offset_s + frame, old.offset_s + old.frame_s
        # (the boot clock is derived back from a frame: allow for its rounding)
        steady = up >= old_up - 1e-3 and abs(service_now - service_then) <= tolerance_s
    else:
        steady = (
            old is not None
            and at >= old.measured_at
            and abs(offset_s - old.offset_s) <= tolerance_s
        )
    if old is None:
        since, jumped, previous, previous_since = at, False, None, None
    elif steady:
        since, jumped = old.stable_since, old.jumped
        previous, previous_since = old.previous_s, old.previous_since
    else:
        since, jumped, previous, previous_since = at, True, old.offset_s, old.stable_since
    high, high_at = offset_s, at
    if old is not None and old.high_s is not None and old.high_at is not None:
        catching_up = at - old.high_at <= old.high_s - offset_s
        if old.high_s > offset_s + tolerance_s and catching_up:
            high, high_at = old.high_s, old.high_at
    seen = at + offset_s  # the service's clock at this measurement
    high_date = seen if old is None or old.high_date is None else max(old.high_date, seen)
    back_mark = None if old is None else old.back_mark
    if old is not None and old.high_date is not None:
        # since the last measurement the service's clock ran at most the real time that
        # passed (on the boot clock): its mark is at most that far past what was seen. A
        # clock found short of that went back at some point, and commits were stamped at
        # the mark, up to that bound. Across a reboot only this boot's uptime is known to
        # have passed (a Pi boots on an old saved time, or an RTC set ahead: the wall clock
        # would put the mark hours off and stretch every window to it)
        if old_up is not None and same_boot and up is not None:
            elapsed = max(0.0, up - old_up)
        elif up is not None:
            elapsed = max(0.0, up)
        else:
            elapsed = max(0.0, at - old.measured_at)
        bound = max(old.high_date, old.measured_at + old.offset_s + elapsed)
        if seen < bound - tolerance_s:
            back_mark = bound if back_mark is None else max(back_mark, bound)
    if old is None or boot is None or up is None:
        stable_up: float | None = up
        previous_up = previous_frame = None
    elif steady:
        # held across a reboot: at least since this boot began
        stable_up = old.stable_up if same_boot else 0.0
        previous_up = old.previous_up if same_boot else None
        previous_frame = old.previous_frame_s if same_boot else None
    else:
        stable_up = up
        previous_up = old.stable_up if same_boot else None
        previous_frame = old.frame_s if same_boot else None
    return ClockReading(
        offset_s,
        at,
        since,
        jumped,
        previous,
        previous_since,
        high,
        high_at,
        high_date,
        boot,
        frame,
        stable_up,
        previous_up,
        previous_frame,
        back_mark,
    )


#: how far ahead of its own `Date` a service may stamp a commit: its commit times never go
#: back, so after its clock stepped back it stamps at the old high-water mark until the
#: clock has caught up (by as much as the step; a day covers any sane correction)
STAMPS_AHEAD_S = 86_400.0


@dataclass(frozen=True)
class Window:
    """A span of server time, and whether a trusted clock measurement placed it."""

    start: datetime
    end: datetime
    measured: bool = True

    def contains(self, moment: datetime) -> bool:
        """True when `moment` lies inside the window (both ends included)."""
        return self.start <= moment <= self.end

    def widened(self, seconds: float) -> Window:
        """The same window, `seconds` longer on each side."""
        pad = timedelta(seconds=seconds)
        return Window(self.start - pad, self.end + pad, self.measured)

    def covers(self, other: Window) -> bool:
        """True when `other` lies wholly inside this window."""
        return self.start <= other.start and other.end <= self.end
