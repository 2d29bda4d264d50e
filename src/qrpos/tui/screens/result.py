"""Step 4: the outcome, unmistakable; back to the amount after a few seconds or any key."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from qrpos.tui.i18n import t
from qrpos.tui.screens.base import KioskScreen
from qrpos.tui.widgets.big_amount import BigAmount


@dataclass(frozen=True)
class ResultView:
    """What the result screen shows, already in words (see `qrpos.tui.outcome`)."""

    kind: str  # approved | declined | warning
    headline: str
    detail: Text
    amount: int
    bell: bool


class ResultScreen(KioskScreen):
    """Green for approved, red for declined, yellow for everything that needs a word."""

    def __init__(self, view: ResultView, *, linger_s: float) -> None:
        super().__init__()
        self.view = view
        self.linger_s = linger_s
        self._done = False

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(self.view.headline, "")
        with Vertical(id="body", classes=f"result-{self.view.kind}"):
            yield Static(Text(self.view.headline, style="bold"), id="headline")
            yield BigAmount(self.view.amount, id="amount")
            yield Static(self.view.detail, id="detail")
        yield from self.compose_footer(t("result.back_hint"))

    def on_mount(self) -> None:
        self.add_class(f"result-{self.view.kind}")
        if self.view.bell:
            self.app.bell()
        if self.linger_s > 0:
            self.set_timer(self.linger_s, self._next_sale)

    def _next_sale(self) -> None:
        if not self._done:
            self._done = True
            self.kiosk().show_amount()

    def on_key(self, event: events.Key) -> None:
        if event.key in ("f2", "o"):
            return
        event.stop()
        self._next_sale()
