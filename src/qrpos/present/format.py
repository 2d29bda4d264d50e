"""How money, times and scanned text look on the kiosk screen. Does not import Textual."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from qrpos import spec
from qrpos.redact import escape_text

TUGRIK = "₮"
LOCAL_TZ = timezone(spec.LOCAL_UTC_OFFSET, "UTC+8")


def group_thousands(amount: int) -> str:
    """``12500`` -> ``12,500``."""
    return f"{amount:,}"


def format_mnt(amount: int) -> str:
    """``12,500 ₮``."""
    return f"{group_thousands(amount)} {TUGRIK}"


def local_time(moment: datetime, *, seconds: bool = True) -> str:
    """A moment as the shop's wall clock shows it (UTC+8, no DST)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime; pass an aware one")
    return moment.astimezone(LOCAL_TZ).strftime("%H:%M:%S" if seconds else "%H:%M")


def local_datetime(moment: datetime) -> str:
    """``2024-05-01 14:03:09`` in local time (UTC+8)."""
    return moment.astimezone(LOCAL_TZ).strftime("%Y-%m-%d %H:%M:%S")


def elapsed(seconds: float) -> str:
    """``0:07`` / ``12:03``: how long something has been going on."""
    whole = max(0, int(seconds))
    minutes, secs = divmod(whole, 60)
    return f"{minutes}:{secs:02d}"


def since(moment: datetime, now: datetime) -> str:
    """When something began: the local time, plus how long ago when it is under a day."""
    ago = now - moment
    if ago < timedelta(days=1):
        return f"{local_time(moment, seconds=False)} ({elapsed(ago.total_seconds())})"
    return local_datetime(moment)


def shown_text(raw: str, limit: int = 60) -> str:
    """Untrusted text (a scanned payload, a service message) made safe and short for the
    screen: escapes for control characters, cut at `limit` characters with an ellipsis."""
    escaped = escape_text(raw)
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "…"


# --- large digits (block characters, present in every console font) --------------------

_GLYPHS_3X5: dict[str, tuple[str, ...]] = {
    "0": ("###", "# #", "# #", "# #", "###"),
    "1": (" # ", "## ", " # ", " # ", "###"),
    "2": ("###", "  #", "###", "#  ", "###"),
    "3": ("###", "  #", " ##", "  #", "###"),
    "4": ("# #", "# #", "###", "  #", "  #"),
    "5": ("###", "#  ", "###", "  #", "###"),
    "6": ("###", "#  ", "###", "# #", "###"),
    "7": ("###", "  #", "  #", " # ", " # "),
    "8": ("###", "# #", "###", "# #", "###"),
    "9": ("###", "# #", "###", "  #", "###"),
    ",": ("", "", "", "#", "#"),
    " ": ("", "", "", "", ""),
    TUGRIK: ("###", " # ", " ##", "## ", " # "),
}


def big_text(text: str, *, scale: int = 2) -> list[str]:
    """Five rows of block characters spelling `text` (digits, commas, spaces, ₮).

    Each pixel is `scale` columns wide; glyphs are separated by one column. Other
    characters are skipped (the caller formats the amount first).
    """
    rows = ["", "", "", "", ""]
    first = True
    for ch in text:
        glyph = _GLYPHS_3X5.get(ch)
        if glyph is None:
            continue
        width = max(len(r) for r in glyph) or 1
        for i in range(5):
            cells = glyph[i].ljust(width)
            rows[i] += ("" if first else " ") + "".join(
                ("█" if c == "#" else " ") * scale for c in cells
            )
        first = False
    return rows
