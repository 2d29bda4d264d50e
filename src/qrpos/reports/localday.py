"""The shop's business day: a calendar day in Mongolia (UTC+8, no daylight saving).

A local day starting at 00:00 begins at 16:00:00Z of the previous UTC day; the window
of a day is half-open, ``[start, next day's start)``, so a charge belongs to exactly one
day however the service treats the `to` bound.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from qrpos import spec

LOCAL_TZ = ZoneInfo(spec.LOCAL_TIMEZONE)
ONE_DAY = timedelta(days=1)


def to_local(moment: datetime) -> datetime:
    """An aware datetime shown in the shop's time zone."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime; pass an aware one")
    return moment.astimezone(LOCAL_TZ)


def local_day_of(moment: datetime) -> date:
    """The business day an instant belongs to."""
    return to_local(moment).date()


def local_hour_of(moment: datetime) -> int:
    """The hour of the local clock (0..23) at an instant."""
    return to_local(moment).hour


def day_window(day: date) -> tuple[datetime, datetime]:
    """``(start, end)`` in UTC of a local day; `start` inclusive, `end` exclusive."""
    start = datetime(day.year, day.month, day.day, tzinfo=LOCAL_TZ).astimezone(UTC)
    nxt = day + ONE_DAY
    end = datetime(nxt.year, nxt.month, nxt.day, tzinfo=LOCAL_TZ).astimezone(UTC)
    return start, end


def today(now: datetime) -> date:
    """The business day it is at `now` (an aware instant)."""
    return local_day_of(now)


def parse_day(text: str) -> date:
    """A ``YYYY-MM-DD`` local date, or ValueError with a message fit for the user."""
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a date; write it as YYYY-MM-DD") from None


def in_window(moment: datetime, start: datetime, end: datetime) -> bool:
    """True when `moment` lies in the half-open window ``[start, end)``."""
    return start <= moment < end
