"""Does a screen fit 80×24? Every line a widget draws must fit its width (no wrap, no
clipping); only widgets classed `prose` (paragraphs) may wrap, and they must still be
wholly on screen. Shared by the kiosk's and the owner's fit tests."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static


def overflows(screen: Screen[Any], size: tuple[int, int] = (80, 24)) -> list[str]:
    """What does not fit: one description per widget line that wraps or is cut."""
    width, height = size
    problems: list[str] = []
    for widget in screen.query("*"):
        if not widget.display or not widget.is_mounted:
            continue
        region = widget.region
        name = f"{type(widget).__name__}#{widget.id or '?'}"
        if region.width and (region.right > width or region.bottom > height):
            problems.append(f"{name} lies outside {width}×{height}: {region}")
        if isinstance(widget, DataTable):
            needed = sum(col.get_render_width(widget) for col in widget.columns.values())
            if needed > widget.content_region.width:
                problems.append(f"{name} needs {needed} columns, has {widget.content_region.width}")
            continue
        if not isinstance(widget, Static) or isinstance(widget, Input):
            continue
        room = widget.content_region.width
        text = str(widget.render())
        if widget.has_class("prose") or not text.strip() or room <= 0:
            continue
        for line in text.splitlines():
            if cell_len(line.rstrip()) > room:
                problems.append(f"{name} wraps ({cell_len(line.rstrip())} > {room}): {line!r}")
    return problems
