"""Step 2: the customer shows the wallet pass; the camera is armed only on this screen."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Static

from qrpos.present.i18n import t
from qrpos.present.outcome import refusal_words
from qrpos.tui.keypad import STARTS_AMOUNT, KeypadAction, keypad_action
from qrpos.tui.messages import HeldCardAccepted, PresentCancelled
from qrpos.tui.screens.base import KioskScreen
from qrpos.tui.widgets.big_amount import BigAmount

#: size of the aiming view in character cells (each cell is two frame rows of half-blocks)
PREVIEW_COLS = 32
PREVIEW_ROWS = 8
#: the refusal code of a card that was in view before the last sale ended
HELD = "held"

Preview = Callable[[int, int], list[str]]


class PresentCardScreen(KioskScreen):
    """The amount stays large for the customer; a small live view helps aim the phone."""

    def __init__(self, amount: int, *, timeout_s: float, preview: Preview | None = None) -> None:
        super().__init__()
        self.amount = amount
        self.timeout_s = timeout_s
        self.preview = preview
        #: the last scan refusal shown (code, reason), redrawn after a language switch
        self.refusal: tuple[str | None, str] | None = None
        #: the camera's trouble state shown (None: none), redrawn after a language switch
        self.camera_error: str | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(t("present.title"))
        with Vertical(id="body"):
            yield BigAmount(self.amount, id="amount")
            with Horizontal(id="present-row"):
                yield Static(Text(t("present.no_camera")), id="aiming")
                yield Static(Text(t("present.waiting")), id="scan-status", classes="prose")
        yield from self.compose_footer(t("present.hint"))

    def on_mount(self) -> None:
        self.set_timer(self.timeout_s, self._timed_out)
        if self.preview is not None:
            self.update_preview()
            self.set_interval(0.2, self.update_preview)

    def after_recompose(self) -> None:
        if self.refusal is not None:
            self.show_refusal(*self.refusal)
        elif self.camera_error is not None:
            self.show_camera_trouble(self.camera_error)
        if self.preview is not None:
            self.update_preview()

    def update_preview(self) -> None:
        """Redraw the aiming view from the scan loop's latest frame."""
        if self.preview is None:
            return
        try:
            aiming = self.query_one("#aiming", Static)
        except NoMatches:
            return  # being composed again for a new language
        rows = self.preview(PREVIEW_COLS, PREVIEW_ROWS)
        # Text, not markup: the preview is data
        aiming.update(Text("\n".join(rows), no_wrap=True))

    def show_refusal(self, code: str | None, reason: str) -> None:
        """A code the scanner will not hand over, in the catalogue's words."""
        self.refusal = (code, reason)
        # Text, not markup: the fallback reason may quote what the QR said
        self._update("#scan-status", Text(refusal_words(code, reason), style="bold yellow"))
        self._update("#hint", t("present.hint_held") if code == HELD else t("present.hint"))

    def show_camera_trouble(self, state: str | None) -> None:
        """The camera is in trouble (`state`: error, unavailable or no_frames), in the
        catalogue's words; None when frames flow again. A held card's question stays: it
        waits for the cashier. (The scanner's own English detail goes to the log.)"""
        was, self.camera_error = self.camera_error, state
        if self.refusal is not None and self.refusal[0] == HELD:
            return
        if state is not None:
            self._update("#scan-status", Text(t(f"present.camera_{state}"), style="bold yellow"))
        elif was is not None:
            self._update("#scan-status", Text(t("present.waiting")))

    def _update(self, selector: str, content: Text | str) -> None:
        # while composed again for a new language there is nothing yet: after_recompose redraws
        with contextlib.suppress(NoMatches):
            self.query_one(selector, Static).update(content)

    def _timed_out(self) -> None:
        self.post_message(PresentCancelled(timed_out=True))

    def on_key(self, event: events.Key) -> None:
        action = keypad_action(event)
        if action is None:
            return
        if action[0] in (KeypadAction.CANCEL, KeypadAction.CLEAR):
            event.stop()
            self.post_message(PresentCancelled(timed_out=False))
        elif action[0] in STARTS_AMOUNT:
            # the amount is set for this customer: a digit is refused where it can be seen
            event.stop()
            self._update("#hint", Text(t("present.amount_set"), style="bold yellow"))
        elif action[0] is KeypadAction.CONFIRM and self.refusal and self.refusal[0] == HELD:
            event.stop()
            self.refusal = None
            self._update("#scan-status", Text(t("present.waiting")))
            self._update("#hint", t("present.hint"))
            self.post_message(HeldCardAccepted())
