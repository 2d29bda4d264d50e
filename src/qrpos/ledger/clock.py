"""The server's clock as this kiosk measured it: the offset that puts look-up windows right.

A Pi without a real-time clock can boot minutes (or days) off; the history's `createdAt`
is the server's clock. Every response's `Date` (charges, refunds and history pages alike)
measures `offset = server − local`; the latest measurement is kept in the outbox with
when it was taken and since when the offset has held (a jump of either clock resets that).

A measurement is trusted for a sale when it is the sale's own (a response to one of its
requests), or the offset has held since before the sale, or it is the first measurement
ever and was taken close to the sale. After a jump, a sale from before it that has no
measurement of its own gets a window that spans the offsets before and after the jump
(the jump may have come before or after its requests); with two jumps since, it is
unmeasured. A sale's window also spans every offset its own responses measured (a 409's
and a 5xx's `Date` too, and its look-ups'): `qrpos.ledger.history.offsets_for`. And since a
service's commit times never go back when its clock does, the highest offset seen
(`high_s`) stays in every window until the service's clock has had time to catch up with it.
Without one the look-up window widens by `RetryPolicy.max_clock_skew_s`, and absence is
never final (`qrpos.ledger.claims`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from qrpos.ledger.store import Ledger, LedgerError

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


def read(conn: sqlite3.Connection) -> ClockReading | None:
    """The stored reading, or None when the server's clock was never measured."""
    row = conn.execute(
        "SELECT offset_s, measured_at, stable_since, jumped, previous_s, previous_since,"
        " high_s, high_at, high_date FROM server_clock WHERE id = 1"
    ).fetchone()
    if row is None or row[0] is None:
        return None
    return ClockReading(
        float(row[0]),
        float(row[1]),
        float(row[2]),
        bool(row[3]),
        None if row[4] is None else float(row[4]),
        None if row[5] is None else float(row[5]),
        None if row[6] is None else float(row[6]),
        None if row[7] is None else float(row[7]),
        None if row[8] is None else float(row[8]),
    )


def observe(conn: sqlite3.Connection, offset_s: float, at: float, tolerance_s: float) -> None:
    """Store a measurement; a change beyond `tolerance_s` (or time going back) is a jump."""
    old = read(conn)
    steady = (
        old is not None and at >= old.measured_at and abs(offset_s - old.offset_s) <= tolerance_s
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
    conn.execute(
        "INSERT INTO server_clock (id, offset_s, measured_at, stable_since, jumped, previous_s,"
        " previous_since, high_s, high_at, high_date) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET"
        " offset_s = excluded.offset_s, measured_at = excluded.measured_at,"
        " stable_since = excluded.stable_since, jumped = excluded.jumped,"
        " previous_s = excluded.previous_s, previous_since = excluded.previous_since,"
        " high_s = excluded.high_s, high_at = excluded.high_at,"
        " high_date = excluded.high_date",
        (offset_s, at, since, int(jumped), previous, previous_since, high, high_at, high_date),
    )


def latest_service_time(
    conn: sqlite3.Connection, local: float, margin_s: float, unmeasured_s: float
) -> float:
    """The latest the service's clock (and its commit stamps) may read at local time
    `local`: the measured offset, or the high-water offset its stamps may still be at, plus
    `margin_s` and the `Date`'s second; never measured: `unmeasured_s` ahead of `local`."""
    reading = read(conn)
    if reading is None:
        return local + unmeasured_s + margin_s
    now = local + reading.offset_s
    top = now if reading.high_date is None else max(now, reading.high_date)
    return top + margin_s + DATE_RESOLUTION_S


def terminal_id(conn: sqlite3.Connection, username: str | None) -> str | None:
    """The `ter_` id of the terminal paired as `username`, once the history or a verified
    reply has shown it. A new pairing is a new terminal: the id learned under another
    username (or before usernames were kept) is not this one's."""
    row = conn.execute(
        "SELECT terminal_id, terminal_user FROM server_clock WHERE id = 1"
    ).fetchone()
    if row is None or row[0] is None:
        return None
    if username is not None and row[1] != username:
        return None
    return str(row[0])


def learn_terminal_id(conn: sqlite3.Connection, value: str | None, username: str | None) -> None:
    """Remember the id of the terminal paired as `username` (the history is scoped to it by
    the service); the first one seen for a pairing is kept, a new pairing replaces it."""
    if not value or terminal_id(conn, username) is not None:
        return
    conn.execute(
        "INSERT INTO server_clock (id, terminal_id, terminal_user) VALUES (1, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET terminal_id = excluded.terminal_id,"
        " terminal_user = excluded.terminal_user",
        (value, username),
    )


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return None  # not Linux: no step-proof stamps, the wall clock alone


#: this boot's id (None where the system does not tell)
BOOT_ID = _boot_id()


def uptime_s() -> float:
    """Seconds on a clock that NTP never steps and that counts a suspend (CLOCK_BOOTTIME)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


def boot_stamp() -> tuple[str | None, float | None]:
    """A step-proof stamp (this boot's id, `uptime_s`), stored with an unclear request's
    end: waiting for late commits is then counted in real seconds on this boot, however
    the wall clock moves (`real_seconds_since`)."""
    return BOOT_ID, (uptime_s() if BOOT_ID else None)


def real_seconds_since(boot: str | None, up: float | None) -> float | None:
    """Real seconds since a stamp taken on this boot; None for another boot or no stamp
    (then only the wall clock can tell)."""
    if boot is None or up is None or boot != BOOT_ID:
        return None
    return uptime_s() - up


#: how often `ServiceClock` reads the measured offset from the outbox again
SERVICE_CLOCK_REREAD_S = 30.0


class ServiceClock:
    """The service's clock as this kiosk measured it (`Date` of its replies), read from
    the outbox at most every `SERVICE_CLOCK_REREAD_S`; the kiosk's own clock until it has
    been measured, or when the outbox cannot be read."""

    def __init__(self, ledger: Ledger, local: Callable[[], datetime]) -> None:
        self._ledger = ledger
        self._local = local
        self._checked_at: float | None = None
        self._offset_s = 0.0

    def now(self) -> datetime:
        """The service's "now" (aware UTC)."""
        if self._checked_at is None or time.monotonic() - self._checked_at > SERVICE_CLOCK_REREAD_S:
            try:
                reading = self._ledger.read(read)
            except LedgerError:
                reading = None  # a closed or broken outbox: the kiosk's own clock
            self._offset_s = reading.offset_s if reading is not None else 0.0
            self._checked_at = time.monotonic()
        return self._local() + timedelta(seconds=self._offset_s)
