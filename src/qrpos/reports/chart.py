"""The hourly takings chart as plain text rows (block characters only, so it reads on
the Linux console); the owner's screen colours it, `qrpos report` prints it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qrpos.reports.endofday import HourTakings

_EIGHTHS = " ▏▎▍▌▋▊▉"
FULL = "█"


@dataclass(frozen=True)
class ChartRow:
    """One hour: label ``HH``, a bar of `width` cells at most, and the amount."""

    hour: int
    bar: str
    gross_mnt: int
    count: int


def bar(value: int, top: int, width: int) -> str:
    """A horizontal bar for `value` out of `top`, in eighths of a cell; any non-zero
    value shows at least a sliver so a small hour is never confused with an empty one."""
    if value <= 0 or top <= 0 or width <= 0:
        return ""
    eighths = max(1, round(value * width * 8 / top))
    full, rest = divmod(eighths, 8)
    return FULL * full + (_EIGHTHS[rest] if rest else "")


def hourly_rows(hourly: Sequence[HourTakings], width: int, *, trim: bool = True) -> list[ChartRow]:
    """Rows for the hours from the first to the last hour with takings (all 24 when
    `trim` is False or the day is empty)."""
    top = max((h.gross_mnt for h in hourly), default=0)
    busy = [h.hour for h in hourly if h.gross_mnt > 0]
    first, last = (busy[0], busy[-1]) if trim and busy else (0, len(hourly) - 1)
    return [
        ChartRow(h.hour, bar(h.gross_mnt, top, width), h.gross_mnt, h.count)
        for h in hourly
        if first <= h.hour <= last
    ]
