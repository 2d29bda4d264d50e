"""The demo's extras beside the cashier's screen: what the customer display shows, the
virtual printer's last slip, and the demo's own notices.

A kiosk's screen is the cashier's: at 80×24 nothing may cover its key hints or its big
amount. So the extras live in one panel docked at the right, shown when the terminal has
room beside a whole 80-column cashier's screen, and otherwise only while the person
trying the demo asks for it (`c`). Every kiosk screen carries one (hidden outside the
demo); each watches the app's one reactive `demo_extras`, as the status bars watch
`status`. Text only, never markup: the slip and the views are data.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from qrpos.present.customer import CustomerView, pole_lines
from qrpos.present.i18n import t

#: the panel's width in cells; it is shown by itself when the terminal has this much
#: room beside 80 columns
PANEL_WIDTH = 36
#: the demo's notices kept in the panel, newest last (the panel fits 23 rows at 80×24:
#: the customer's view, two notices and a whole slip)
NOTICES_KEPT = 2


@dataclass(frozen=True)
class DemoExtras:
    """What the demo's panel shows; replaced (never mutated) so every panel redraws."""

    #: the panel is shown (the terminal is wide enough, or `c` asked for it)
    shown: bool = False
    #: what the customer display shows now (None: nothing yet)
    customer: CustomerView | None = None
    #: the virtual printer's last slip, as printed
    slip: str = ""
    #: the demo's notices, newest last
    notices: tuple[str, ...] = ()


def panel_text(extras: DemoExtras, width: int = PANEL_WIDTH - 3) -> Text:
    """The panel's lines: the customer's view (as a 2×20 pole display shows it: what a
    screen shows is in `qrpos display preview`), the demo's notices, the last slip."""
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(t("display.virtual") + "\n", style="bold cyan")
    view = extras.customer
    if view is not None:
        style = {"paid": "bold green", "not_paid": "bold red", "check": "bold yellow"}
        out.append("┌" + "─" * 20 + "┐\n")
        for line in pole_lines(view):
            out.append("│")
            out.append(line, style=style.get(view.kind, "bold"))
            out.append("│\n")
        out.append("└" + "─" * 20 + "┘\n")
    if extras.notices:
        for notice in extras.notices:
            for line in textwrap.wrap(notice, width) or [""]:
                out.append(line + "\n", style="yellow")
    if extras.slip:
        out.append(t("printer.virtual") + "\n", style="bold cyan")
        for line in extras.slip.splitlines():
            out.append(line[:width] + "\n")
    out.rstrip()
    return out


class DemoPanel(Widget):
    """The demo's panel (see the module's docstring)."""

    DEFAULT_CSS = f"""
    DemoPanel {{
        dock: right;
        width: {PANEL_WIDTH};
        height: 1fr;
        padding: 0 1;
        border-left: solid cyan;
        background: black;
        color: white;
        display: none;
    }}
    """

    def __init__(self) -> None:
        super().__init__(id="demo-panel")
        self._extras = DemoExtras()

    def on_mount(self) -> None:
        if hasattr(self.app, "demo_extras"):
            self.watch(self.app, "demo_extras", self._extras_changed, init=True)

    def _extras_changed(self, extras: DemoExtras) -> None:
        self._extras = extras
        self.display = extras.shown
        self.refresh()

    def render(self) -> Text:
        return panel_text(self._extras, max(self.size.width, 10))
