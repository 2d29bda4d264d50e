"""Step 2: the customer shows the wallet pass; the camera is armed only on this screen."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from qrpos.tui.i18n import t
from qrpos.tui.keypad import KeypadAction, keypad_action
from qrpos.tui.screens.base import KioskScreen
from qrpos.tui.widgets.big_amount import BigAmount

#: size of the aiming view in character cells (each cell is two frame rows of half-blocks)
PREVIEW_COLS = 32
PREVIEW_ROWS = 8


class PresentCardScreen(KioskScreen):
    """The amount stays large for the customer; a small live view helps aim the phone."""

    def __init__(self, amount: int, *, timeout_s: float, live_preview: bool = True) -> None:
        super().__init__()
        self.amount = amount
        self.timeout_s = timeout_s
        self.live_preview = live_preview

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(t("present.title"), "")
        with Vertical(id="body"):
            yield BigAmount(self.amount, id="amount")
            with Horizontal(id="present-row"):
                yield Static(Text(t("present.no_camera")), id="aiming")
                yield Static(Text(t("present.waiting")), id="scan-status")
        yield from self.compose_footer(t("present.hint"))

    def on_mount(self) -> None:
        self.set_timer(self.timeout_s, self._timed_out)
        if self.live_preview and self.kiosk().services.scanner is not None:
            self.update_preview()
            self.set_interval(0.2, self.update_preview)

    def update_preview(self) -> None:
        """Redraw the aiming view from the scan loop's latest frame."""
        scanner = self.kiosk().services.scanner
        if scanner is None:
            return
        rows = scanner.preview(PREVIEW_COLS, PREVIEW_ROWS)
        # Text, not markup: the preview is data
        self.query_one("#aiming", Static).update(Text("\n".join(rows), no_wrap=True))

    def set_scan_status(self, text: Text) -> None:
        """The plain status line beside the aiming view (built as Text, never markup)."""
        self.query_one("#scan-status", Static).update(text)

    def _timed_out(self) -> None:
        self.kiosk().cancel_presenting(timed_out=True)

    def on_key(self, event: events.Key) -> None:
        action = keypad_action(event)
        if action is not None and action[0] in (KeypadAction.CANCEL, KeypadAction.CLEAR):
            event.stop()
            self.kiosk().cancel_presenting(timed_out=False)
