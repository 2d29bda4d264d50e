"""Step 3: the payment is on its way; an unclear outcome keeps being resolved here."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.widgets import Static

from qrpos.present.format import elapsed
from qrpos.present.i18n import t
from qrpos.present.outcome import UNCLEAR_PHASES, phase_text
from qrpos.tui.keypad import KeypadAction, keypad_action
from qrpos.tui.messages import AbandonAsked
from qrpos.tui.screens.base import KioskScreen
from qrpos.tui.widgets.big_amount import BigAmount

#: the ledger's steps after the first send: the outcome is being checked


class ChargingScreen(KioskScreen):
    """Progress of one charge. Once unclear it says "checking the payment…" with the time
    spent; after `abandon_after_s` the cashier may abandon it (with a confirmation)."""

    def __init__(
        self,
        amount: int,
        *,
        abandon_after_s: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.amount = amount
        self.abandon_after_s = abandon_after_s
        self._monotonic = monotonic
        self.started = monotonic()
        #: the outcome is being checked (any step after the first send): said on screen
        self.checking = False
        #: the ledger has returned the sale unsettled: the cashier may abandon it
        self.unclear = False
        #: the last step reported (phase, attempt), redrawn after a language switch
        self._step = ("sending", 0)

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(t("charging.title"))
        with Vertical(id="body"):
            yield BigAmount(self.amount, id="amount")
            yield Static("", id="phase", markup=False)
            yield Static("", id="checking", markup=False)
        yield from self.compose_footer("")

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(0.5, self.tick)

    def after_recompose(self) -> None:
        self.tick()

    @property
    def may_abandon(self) -> bool:
        """True once the sale has been unclear for long enough to offer abandoning it."""
        return self.unclear and self.waited_s >= self.abandon_after_s

    @property
    def waited_s(self) -> float:
        """Seconds since the charge started."""
        return self._monotonic() - self.started

    def show_progress(self, phase: str, attempt: int) -> None:
        """A step reported by the ledger; any step after the first send means the outcome
        is being checked (the seconds count from the start of the charge)."""
        self._step = (phase, attempt)
        if phase in UNCLEAR_PHASES:
            self.checking = True
        self.tick()

    def show_unclear(self) -> None:
        """The outcome is unknown; the kiosk keeps resolving it."""
        self.unclear = True
        self.tick()

    def tick(self) -> None:
        """Refresh the elapsed time and what the cashier may do."""
        try:
            phase_line = self.query_one("#phase", Static)
            checking = self.query_one("#checking", Static)
        except NoMatches:
            return  # not composed yet, or composed again for a new language: drawn then
        phase, attempt = self._step
        phase_line.update(phase_text(phase, attempt))
        if self.checking or self.unclear:
            checking.update(
                Text(t("charging.checking", elapsed=elapsed(self.waited_s)), style="bold")
                + Text("\n" + t("charging.no_new_sale"))
            )
        hint = t("charging.abandon_hint") if self.may_abandon else ""
        self.query_one("#hint", Static).update(hint)

    def on_key(self, event: events.Key) -> None:
        action = keypad_action(event)
        if action is not None and action[0] is KeypadAction.CANCEL:
            event.stop()
            if self.may_abandon:
                self.post_message(AbandonAsked())
