"""The kiosk's screen keeper: one screen per sale state, and the status every bar shows.

`KioskApp` builds on this: the sale's owner (`qrpos.tui.sale.Sale`) posts `Sale.Moved`
and progress messages, and this class puts up the state's screen, relays progress to the
screen on top, and keeps the one reactive `status` that every `StatusBar` watches.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

from textual import on
from textual.app import App
from textual.reactive import var
from textual.screen import Screen

from qrpos import manager_pin
from qrpos.heap import IdleCollector
from qrpos.present.i18n import t
from qrpos.present.outcome import UNCLEAR_PHASES
from qrpos.tui.keypad import KeypadAction
from qrpos.tui.messages import (
    CameraStats,
    ChargeProgressed,
    ChargeUnclear,
    CustomerViewChanged,
    PairingAnswered,
    RecoveryLeft,
    ScanRefusedMessage,
    StatusChanged,
)
from qrpos.tui.receipts import ReceiptFollower
from qrpos.tui.sale import Sale, SaleState
from qrpos.tui.screens.amount import AmountScreen
from qrpos.tui.screens.charging import ChargingScreen
from qrpos.tui.screens.lock import LockScreen
from qrpos.tui.screens.pairing import PairingScreen
from qrpos.tui.screens.present import PresentCardScreen
from qrpos.tui.screens.recovery import RecoveryScreen
from qrpos.tui.screens.result import ResultScreen
from qrpos.tui.services import KioskServices
from qrpos.tui.widgets.demo_panel import NOTICES_KEPT, PANEL_WIDTH, DemoExtras
from qrpos.tui.widgets.status_bar import KioskStatus

log = logging.getLogger("qrpos.tui")


#: camera states the card screen tells the cashier about (in the catalogue's words)
CAMERA_TROUBLE = frozenset({"error", "unavailable", "no_frames"})


class ScreenKeeper(App[None]):
    """Screens and status of the kiosk (the app's settings are set by `KioskApp`)."""

    #: what the status bars show; replaced (never mutated) so every bar redraws
    status: var[KioskStatus] = var(KioskStatus)
    #: what the demo's panels show (the customer's view, the last slip, the notices)
    demo_extras: var[DemoExtras] = var(DemoExtras)
    #: the person trying the demo chose to show or hide its panel (`c`): no resize
    #: overrides that choice
    demo_panel_chosen = False

    services: KioskServices
    sale: Sale
    receipts: ReceiptFollower
    present_timeout_s: float
    abandon_after_s: float
    result_linger_s: float
    live_preview: bool
    #: keypad keys typed on the result screen: the next amount screen replays them
    carried_keys: list[tuple[KeypadAction, str]] | None = None
    #: full garbage collections while no sale is under way (issue 49)
    heap: IdleCollector

    def _tick(self) -> None:
        self.status = replace(self.status, now=self.services.clock())
        self.heap.tick(time.monotonic(), busy=self.sale.under_way)
        if self.sale.state is SaleState.CHARGING and self.services.customer_display is not None:
            self.sale.publish()  # the customer's "wait" counts the seconds

    # --- screens: one per sale state ----------------------------------------------------

    def show_screen(self, screen: Screen[Any]) -> None:
        """Replace whatever sale screen is up with `screen` (dialogs above are closed)."""
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if len(self.screen_stack) <= 1:
            self.push_screen(screen)
        else:
            self.switch_screen(screen)

    def _top(self) -> Screen[Any] | None:
        """The screen on top, or None while the app closes: a worker's or a thread's last
        message (a charge's progress, the camera's stats) may arrive after the last screen
        is gone, and must not end the kiosk with a traceback."""
        stack = self.screen_stack
        return stack[-1] if stack else None

    @on(Sale.Moved)
    def _sale_moved(self, message: Sale.Moved) -> None:
        state, services = message.state, self.services
        if state in (SaleState.RESULT, SaleState.READY):
            self.receipts.sale_over()
        if state is SaleState.READY:
            top = self._top()
            if isinstance(top, AmountScreen) and not message.notice:
                # drawn before the services were in: keep what the cashier keyed
                top.show_prices(services.quick_prices.prices(), self.sale.last_amount)
                top.start_if_waiting()
                return
            carried, self.carried_keys = self.carried_keys, None
            self.show_screen(
                AmountScreen(
                    message.notice,
                    error=message.error,
                    demo_keys=services.demo is not None,
                    carried=carried,
                    prices=services.quick_prices.prices(),
                    last_amount=self.sale.last_amount,
                    **message.notice_fields,
                )
            )
        elif state is SaleState.PRESENTING and message.amount is not None:
            scanner = services.scanner if self.live_preview else None
            preview = scanner.preview if scanner is not None else None
            self.show_screen(
                PresentCardScreen(message.amount, timeout_s=self.present_timeout_s, preview=preview)
            )
        elif state is SaleState.CHARGING and message.amount is not None:
            self.receipts.pause_for_sale()
            self.show_screen(ChargingScreen(message.amount, abandon_after_s=self.abandon_after_s))
        elif state is SaleState.RESULT and message.result is not None:
            self.show_screen(ResultScreen(message.result, linger_s=self.result_linger_s))
        elif state is SaleState.LOCKED:
            self.status = replace(self.status, starting=None)
            self.show_screen(LockScreen())
        elif state is SaleState.PAIRING:
            pin_known = manager_pin.has_pin(services.config.state_dir)
            first = not services.paired
            username = self.status.username or services.config.username
            address = services.service_address
            self.show_screen(
                PairingScreen(
                    first=first,
                    pin_known=pin_known,
                    username=username,
                    base_url=address.value if address is not None else None,
                    ask_base_url=address is not None,
                )
            )
        elif state is SaleState.RECOVERING:
            self.show_screen(RecoveryScreen())

    # --- the demo's panel ------------------------------------------------------------

    @on(CustomerViewChanged)
    def _customer_view_changed(self, message: CustomerViewChanged) -> None:
        if self.services.demo is not None:
            self.demo_extras = replace(self.demo_extras, customer=message.view)

    def demo_notice(self, text: str) -> None:
        """A demo notice goes into the demo's panel: never a toast over the cashier's
        screen (at 80×24 it covered the key hints)."""
        notices = (*self.demo_extras.notices, text)[-NOTICES_KEPT:]
        self.demo_extras = replace(self.demo_extras, notices=notices)

    def fit_demo_panel(self, width: int) -> None:
        """Show the demo's panel by itself when a whole 80-column cashier's screen fits
        beside it (unless `c` chose otherwise)."""
        if self.services.demo is None or self.demo_panel_chosen:
            return
        shown = width >= 80 + PANEL_WIDTH
        if shown != self.demo_extras.shown:
            self.demo_extras = replace(self.demo_extras, shown=shown)

    def toggle_demo_panel(self) -> None:
        """`c` in the demo: show or hide its panel."""
        if self.services.demo is None:
            return
        self.demo_panel_chosen = True
        self.demo_extras = replace(self.demo_extras, shown=not self.demo_extras.shown)

    @on(ChargeProgressed)
    def _charge_progressed(self, message: ChargeProgressed) -> None:
        if isinstance(top := self._top(), ChargingScreen):
            top.show_progress(message.progress.phase, message.progress.attempt)
        if message.progress.phase in UNCLEAR_PHASES:
            self._count_this_sale()

    @on(ChargeUnclear)
    def _charge_unclear(self) -> None:
        if isinstance(top := self._top(), ChargingScreen):
            top.show_unclear()
        self._count_this_sale()

    def _count_this_sale(self) -> None:
        """A sale whose outcome is being checked is unsettled: the status bar counts it
        from the first unclear step (the outbox's count follows when the sale ends)."""
        if self.status.unresolved < 1:
            self.status = replace(self.status, unresolved=1)

    @on(RecoveryLeft)
    def _recovery_left(self, message: RecoveryLeft) -> None:
        if isinstance(top := self._top(), RecoveryScreen):
            top.show_left(message.count)

    @on(PairingAnswered)
    def _pairing_answered(self, message: PairingAnswered) -> None:
        if isinstance(top := self._top(), PairingScreen):
            top.show_notice(message.key, error=message.error, **message.fields)
        if not message.error:
            self.notify(t(message.key, **message.fields), timeout=3)

    @on(StatusChanged)
    def _status_changed(self, message: StatusChanged) -> None:
        status = self.status
        if message.online is not None and message.online != status.online:
            status = replace(status, online=message.online, online_since=self.services.clock())
        if message.unresolved is not None:
            status = replace(status, unresolved=message.unresolved)
        if message.starting is not None:
            status = replace(status, starting=message.starting or None)
        if message.username is not None:
            status = replace(status, username=message.username)
        if message.foreign is not None:
            status = replace(status, foreign=message.foreign)
        self.status = status

    @on(CameraStats)
    def _camera_stats(self, message: CameraStats) -> None:
        top = self._top()
        if top is None:
            return  # the app is closing: the camera thread's last stats come too late
        self.status = replace(self.status, camera_state=message.camera_state, fps=message.fps)
        if isinstance(top, PresentCardScreen):
            trouble = message.camera_state in CAMERA_TROUBLE
            top.show_camera_trouble(message.camera_state if trouble else None)

    @on(ScanRefusedMessage)
    def _scan_refused(self, message: ScanRefusedMessage) -> None:
        if isinstance(top := self._top(), PresentCardScreen):
            top.show_refusal(message.code, message.reason)
