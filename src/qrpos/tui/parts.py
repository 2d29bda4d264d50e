"""The till's own parts as the kiosk app hears of them: the receipt printer's and the
customer display's worker threads report their state here (the status bar and one
notice), the outcome's tone goes to the speaker, and the demo's virtual printer shows the
slip it printed. `KioskApp` is one."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from qrpos.present.i18n import t
from qrpos.tui.screen_keeper import ScreenKeeper
from qrpos.tui.screens.base import KioskScreen

if TYPE_CHECKING:
    from qrpos.peripherals.slip import Slip
    from qrpos.present.outcome import ToneName
    from qrpos.said import Said

log = logging.getLogger("qrpos.tui")


class TillParts(ScreenKeeper):
    """The printer's and the customer display's state, relayed from their threads, and
    the outcome's tone."""

    # --- the receipt printer (its worker thread reports here) ----------------------------

    def _connect_printer(self) -> None:
        printing = self.services.printing
        if printing is None:
            return
        printing.on_state = self._printer_state_from_thread
        if self.services.demo is not None:
            printing.on_printed = self._slip_printed_from_thread
        self.status = replace(self.status, printer=printing.state == "attention")

    def _printer_state_from_thread(self, state: str, why: Said | None) -> None:
        try:
            self.call_from_thread(self._printer_state, state, why)
        except RuntimeError:
            log.debug("printer state after the app stopped")

    def _printer_state(self, state: str, why: Said | None) -> None:
        """The status bar says the printer needs attention while it does; the reason
        once, as a notice (the sale goes on: slips wait in the queue)."""
        from qrpos.present.words import words

        attention = state == "attention"
        was = self.status.printer
        self.status = replace(self.status, printer=attention)
        if attention:
            self.notify(t("printer.attention", why=words(why)), severity="warning", markup=False)
        elif was:
            self.notify(t("printer.back"), markup=False)

    # --- the customer display (its worker thread reports here) -------------------------

    def _connect_display(self) -> None:
        display = self.services.customer_display
        if display is None:
            return
        display.on_state = self._display_state_from_thread
        self.status = replace(self.status, display=display.state == "attention")

    def _display_state_from_thread(self, state: str, why: Said | None) -> None:
        try:
            self.call_from_thread(self._display_state, state, why)
        except RuntimeError:
            log.debug("customer display state after the app stopped")

    def _display_state(self, state: str, why: Said | None) -> None:
        """The status bar says the customer display needs attention while it does; the
        reason once, as a notice (the sale goes on; the display shows it when it is back)."""
        from qrpos.present.words import words

        attention = state == "attention"
        was = self.status.display
        self.status = replace(self.status, display=attention)
        if attention and not was:
            self.notify(t("display.attention", why=words(why)), severity="warning", markup=False)
        elif was and not attention:
            self.notify(t("display.back"), markup=False)

    def _slip_printed_from_thread(self, slip: Slip) -> None:
        try:
            self.call_from_thread(self._show_slip, slip)
        except RuntimeError:
            log.debug("slip printed after the app stopped")

    def _show_slip(self, slip: Slip) -> None:
        """The demo's virtual printer: the slip as it printed, in a notice."""
        self.demo_extras = replace(self.demo_extras, slip=slip.plain(32))
        if not isinstance(self.screen, KioskScreen):
            # the owner's screens (a copy, the end of day) have no panel: a notice there
            # covers no cashier's screen
            self.notify(slip.plain(32), title=t("printer.virtual"), timeout=8, markup=False)

    # --- the speaker or buzzer ---------------------------------------------------------

    def play_tone(self, tone: ToneName) -> None:
        """The outcome's tone on the till's speaker or buzzer; without one, the terminal
        bell for approved and declined (never for "attention": a bell would sound like a
        decline where the outcome is not known)."""
        bell = self.bell if tone != "attention" else None
        sounds = self.services.sounds
        if sounds is None:
            if bell is not None:
                bell()
            return
        sounds.play(tone, bell=bell)
