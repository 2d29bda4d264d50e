"""Any 401: the terminal's credentials are dead; no sale until it is paired again."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from qrpos.present.i18n import t
from qrpos.tui.messages import PairingRequested
from qrpos.tui.screens.base import KioskScreen


class LockScreen(KioskScreen):
    """Red, plain words, one way out: Enter opens pairing. Pending sales stay stored."""

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(t("app.title"))
        with Vertical(id="body", classes="lock"):
            yield Static(t("lock.title"), id="headline", markup=False)
            yield Static(t("lock.body"), id="detail", classes="prose", markup=False)
        yield from self.compose_footer(t("lock.hint"))

    def on_key(self, event: events.Key) -> None:
        if event.key in ("enter", "plus"):
            event.stop()
            self.post_message(PairingRequested())
