"""Step 4: the outcome, unmistakable; back to the amount after a few seconds or any key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from qrpos.present.i18n import t
from qrpos.tui.keypad import STARTS_AMOUNT, KeypadAction, keypad_action
from qrpos.tui.messages import NextSale
from qrpos.tui.screens.base import KioskScreen
from qrpos.tui.widgets.big_amount import BigAmount

if TYPE_CHECKING:
    from qrpos.ledger import SaleResult
    from qrpos.present.outcome import OutcomeView


class ResultScreen(KioskScreen):
    """Green for approved, red for declined, yellow for a payment the owner must check
    and for everything else that needs a word. The headline is said once, in the body;
    the title line names the step."""

    def __init__(self, result: SaleResult, *, linger_s: float) -> None:
        super().__init__()
        self.result = result
        self.linger_s = linger_s
        self._done = False
        #: keypad keys typed here, in order: they start the next amount (`NextSale`)
        self.carried: list[tuple[KeypadAction, str]] = []

    @property
    def view(self) -> OutcomeView:
        """The outcome in the current language."""
        # the ledger loads after the first screen is drawn (see qrpos.tui.startup)
        from qrpos.present.outcome import outcome_view

        return outcome_view(self.result)

    def compose(self) -> ComposeResult:
        view = self.view
        yield from self.compose_frame(t("result.title"))
        with Vertical(id="body", classes=f"result-{view.kind}"):
            yield Static(Text(view.headline, style="bold"), id="headline")
            yield BigAmount(view.amount, id="amount")
            # Text, not markup: the detail may quote the service
            yield Static(Text(view.detail), id="detail", classes="prose")
        yield from self.compose_footer(t("result.back_hint"))

    def on_mount(self) -> None:
        view = self.view
        self.add_class(f"result-{view.kind}")
        if view.tone is not None:
            play_tone = getattr(self.app, "play_tone", None)
            if play_tone is not None:
                play_tone(view.tone)
            elif view.tone != "attention":  # a host without tones: the bell, never for
                self.app.bell()  # an unknown outcome (it would sound like a decline)
        if self.linger_s > 0:
            self.set_timer(self.linger_s, self._next_sale)

    def _next_sale(self) -> None:
        if not self._done:
            self._done = True
            self.post_message(NextSale(self.carried))

    def on_key(self, event: events.Key) -> None:
        """Any key ends the result. A keypad key is never lost: a digit starts the next
        amount with it (so does a quick price or the repeat key), and every keypad key
        after it (until the amount screen is up) is carried over in order. Other keys go on
        to the app's own bindings."""
        action = keypad_action(event)
        if action is None:
            self._next_sale()
            return
        event.stop()
        event.prevent_default()
        if self._done or action[0] in STARTS_AMOUNT:
            self.carried.append(action)
        self._next_sale()
