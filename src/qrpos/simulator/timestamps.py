"""The list window's bounds: RFC 3339 date-times read at the precision the caller wrote.

The sandbox does not go through `datetime` to read `from` and `to`: `datetime` stops at the
microsecond (so digits past it were dropped, and a `from` 100 ns after a row still included
it) and at years 1..9999 in UTC (so `0001-01-01T00:00:00+01:00` crashed the list). An
`Instant` is whole seconds since the epoch (any integer) plus the fractional digits as
written, and compares exactly; a row's microsecond time is compared with the bound's
ceiling (`from`) or floor (`to`), which is exact because row times are whole microseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RFC3339_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|([+-])(\d{2}):(\d{2}))",
    re.ASCII,  # \d is 0-9 only: no Arabic-Indic or full-width digits
)
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MICRO_DIGITS = 6


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, any year (H. Hinnant's method)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


@dataclass(frozen=True, order=True)
class Instant:
    """A moment as exact as it was written: ``seconds`` since the epoch (UTC) plus
    ``fraction``, the decimal digits after the point without trailing zeros.

    Ordering compares (seconds, fraction); for digit strings without trailing zeros the
    lexicographic order is the numeric one ("05" < "5" < "51").
    """

    seconds: int
    fraction: str = ""

    @classmethod
    def from_micros(cls, micros: int) -> Instant:
        """The instant of a whole number of microseconds since the epoch."""
        seconds, micro = divmod(micros, 1_000_000)
        return cls(seconds, f"{micro:06d}".rstrip("0"))

    def floor_micros(self) -> int:
        """The last whole microsecond at or before this instant."""
        head = self.fraction[:_MICRO_DIGITS].ljust(_MICRO_DIGITS, "0")
        return self.seconds * 1_000_000 + int(head)

    def ceil_micros(self) -> int:
        """The first whole microsecond at or after this instant."""
        # Digits past the sixth are never all zeros (trailing zeros are stripped).
        return self.floor_micros() + (len(self.fraction) > _MICRO_DIGITS)


def parse_instant(value: str) -> Instant | None:
    """An RFC 3339 date-time (section 5.6: seconds and an offset required; any number of
    fractional digits; ``T``/``Z`` in either case; years 0000..9999; a leap second ``:60``
    counts as the next second), or None when `value` is not one."""
    m = _RFC3339_RE.fullmatch(value)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    if not 1 <= month <= 12:
        return None
    days_in_month = 29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month - 1]
    if not 1 <= day <= days_in_month or hour > 23 or minute > 59 or second > 60:
        return None
    offset = 0
    if m.group(9) is not None:
        off_hour, off_minute = int(m.group(10)), int(m.group(11))
        if off_hour > 23 or off_minute > 59:
            return None
        offset = (off_hour * 3600 + off_minute * 60) * (-1 if m.group(9) == "-" else 1)
    days = _days_from_civil(year, month, day)
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
    return Instant(seconds, (m.group(7) or "").rstrip("0"))
