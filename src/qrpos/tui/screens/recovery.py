"""At start: sales left unsettled by a crash or power cut are settled before the first sale."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from qrpos.present.i18n import t
from qrpos.tui.screens.base import KioskScreen


class RecoveryScreen(KioskScreen):
    """Says what is happening; the app's recovery worker reports into it."""

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(t("app.title"))
        with Vertical(id="body"):
            yield Static(t("recovery.title"), id="headline", markup=False)
            yield Static(t("recovery.body"), id="detail", classes="prose", markup=False)
            yield Static("", id="notice", classes="prose", markup=False)
        yield from self.compose_footer("")

    left = 0

    def show_left(self, count: int) -> None:
        """Some intents are still open after a pass; the app will try again."""
        self.left = count
        self.query_one("#notice", Static).update(t("recovery.left", count=count) if count else "")

    def after_recompose(self) -> None:
        self.show_left(self.left)
