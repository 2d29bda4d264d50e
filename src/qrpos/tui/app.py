"""The cashier's kiosk: Amount → Present card → Charging → Result → Amount.

The app holds no I/O of its own. Everything it talks to arrives in `KioskServices`;
calls into the ledger and the service run in workers, scanner events arrive from the
scan loop's threads through `call_from_thread`, and widgets only render and post.
Given a `ServicesStarter`, the app draws the Amount screen first and builds its services
in a thread worker (see `qrpos.tui.startup`); no sale starts before they are in.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from collections.abc import Awaitable
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.worker import Worker, WorkerState

from qrpos import notify, spec
from qrpos.tui.flow import SaleFlow, blocking_sales
from qrpos.tui.format import shown_text
from qrpos.tui.i18n import set_language, t
from qrpos.tui.messages import CameraStats, ChargeProgressed, ScanRefusedMessage, TokenScanned
from qrpos.tui.receipts import ReceiptFollower
from qrpos.tui.screens.amount import AmountScreen
from qrpos.tui.screens.base import KioskScreen
from qrpos.tui.screens.charging import ChargingScreen
from qrpos.tui.screens.lock import LockScreen
from qrpos.tui.screens.pairing import PairingScreen
from qrpos.tui.screens.present import PresentCardScreen
from qrpos.tui.screens.recovery import RecoveryScreen
from qrpos.tui.services import KioskServices
from qrpos.tui.startup import ServicesStarter
from qrpos.tui.widgets.status_bar import KioskStatus, StatusBar

log = logging.getLogger("qrpos.tui")

OWNER_MODULE = "qrpos.tui.screens.owner"
#: the Charging screen is drawn this long after a token is read, or as soon as the charge
#: settles: drawing it first held the outbox commit and the POST back by ~20 ms at the
#: median and ~70 ms at p95 (benchmarks/scan_to_send.py); a cashier sees no difference
CHARGING_SCREEN_AFTER_S = 0.1


class KioskApp(App[None]):
    """The kiosk. Timings are parameters so tests can shorten them; defaults suit a shop."""

    CSS_PATH = "app.tcss"
    TITLE = "qrpos"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "owner_menu", "owner", show=False),
        Binding("o", "owner_menu", "owner", show=False),
        Binding("p", "demo_phone", "phone", show=False),
        Binding("d", "demo_fault('drop_after_commit')", "drop", show=False),
        Binding("e", "demo_fault('error_after_commit')", "5xx", show=False),
        Binding("l", "demo_fault('rate_limit')", "429", show=False),
        Binding("ctrl+q", "quit", "quit", show=False, priority=True),
    ]

    def __init__(
        self,
        services: KioskServices,
        *,
        present_timeout_s: float = 60.0,
        charge_deadline_s: float = 20.0,
        resolve_every_s: float = 3.0,
        abandon_after_s: float = 20.0,
        result_linger_s: float = 6.0,
        health_every_s: float = 60.0,
        settle_every_s: float = 30.0,
        live_preview: bool = True,
        receipts_every_s: float = spec.POLL_INTERVAL_S,
        starter: ServicesStarter | None = None,
    ) -> None:
        super().__init__()
        #: until `starter` has built the real ones: the config and the clock only
        self.services = services
        self.starter = starter
        #: True once the services are in (at once without a starter)
        self.services_ready = starter is None
        #: True once the start-up recovery is done: before that no sale may start
        self.sales_ready = False
        #: why the starter failed (the CLI reports it after the app exits)
        self.startup_error: BaseException | None = None
        self.present_timeout_s = present_timeout_s
        self.charge_deadline_s = charge_deadline_s
        self.resolve_every_s = resolve_every_s
        self.abandon_after_s = abandon_after_s
        self.result_linger_s = result_linger_s
        self.health_every_s = health_every_s
        self.settle_every_s = settle_every_s
        self.live_preview = live_preview
        known = services.client.username if services.client else None
        #: before the services are in, the configured username stands in
        self.status = KioskStatus(username=known or (services.config.username if starter else None))
        #: the sale on screen: its amount while presenting, its intent while charging
        self.sale_amount: int | None = None
        self.sale_intent: int | None = None
        self.locked = False
        self._ready_sent = False
        self._background_started = False
        #: the sale logic that runs inside this app's workers
        self.sale_flow = SaleFlow(self)
        #: VAT receipts followed all day (the owner's screens use it too)
        self.receipts = ReceiptFollower(
            self, lambda: self.services, interval_s=receipts_every_s, busy=self.sale_under_way
        )
        set_language(services.config.language)

    # --- start and stop -----------------------------------------------------------------

    def on_mount(self) -> None:
        period = notify.watchdog_period_s()
        if period:
            self.set_interval(period, notify.watchdog_ping)
        if self.starter is not None:
            # the real first screen; the services follow once it is drawn (on_ready)
            self.status.starting = "service"
            self.push_screen(AmountScreen())
            return
        self._begin()

    def _begin(self) -> None:
        """Connect the scanner, then pair or recover: the services are in."""
        self.services.scan_events.connect(self._from_scanner)
        if self.services.scanner is not None:
            self._start_scanner()
        if not self.services.paired:
            self.status.starting = None
            self.push_screen(PairingScreen(first=True, username=self.services.config.username))
            return
        if self.starter is not None:
            self.status.starting = "recovery"
            self.refresh_status()
        self.start_background()
        self.start_recovery()

    @work(thread=True, exclusive=True, group="startup", exit_on_error=False)
    def start_services(self) -> None:
        """Build the services off the event loop (imports, sandbox, outbox, camera)."""
        assert self.starter is not None
        services = self.starter.open(self._starting_step_from_thread)
        try:
            self.call_from_thread(self.install_services, services)
        except RuntimeError:
            log.debug("services built after the app stopped")

    def _starting_step_from_thread(self, step: str) -> None:
        try:
            self.call_from_thread(self._starting_step, step)
        except RuntimeError:
            log.debug("start-up step after the app stopped")

    def _starting_step(self, step: str) -> None:
        self.status.starting = step
        self.refresh_status()

    def install_services(self, services: KioskServices) -> None:
        """The starter's services are in: use them, then pair or recover as at start."""
        self.services = services
        self.services_ready = True
        self.status.username = services.client.username if services.client else None
        if isinstance(self.screen, AmountScreen):
            self.screen.refresh_hint()
        self._begin()

    def start_background(self) -> None:
        """Start the health probe and the background settler (once)."""
        if self._background_started:
            return
        self._background_started = True
        self.set_interval(self.health_every_s, self.check_health)
        self.set_interval(self.settle_every_s, self.settle_in_background)
        self.check_health()

    def on_ready(self) -> None:
        if not self._ready_sent:
            self._ready_sent = True
            notify.ready(status="kiosk on screen")
            if self.starter is not None:
                self.start_services()

    def sale_under_way(self) -> bool:
        """True from the amount's Enter to the result: no background polling then."""
        return (
            self.sale_amount is not None
            or self.sale_intent is not None
            or isinstance(self.screen, PresentCardScreen | ChargingScreen)
        )

    def on_unmount(self) -> None:
        self.receipts.stop()
        self.services.scan_events.connect(None)
        if self.services.scanner is not None:
            self.services.scanner.stop()

    @work(thread=True, exclusive=True, group="scanner", exit_on_error=False)
    def _start_scanner(self) -> None:
        # opening a camera blocks; the loop reports failures as ScanStats, never raises
        assert self.services.scanner is not None
        self.services.scanner.start()

    # --- screens ------------------------------------------------------------------------

    def _show(self, screen: KioskScreen) -> Awaitable[Any]:
        """Replace whatever sale screen is up with `screen` (dialogs above are closed);
        awaiting the result waits until `screen` is mounted."""
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if len(self.screen_stack) <= 1:
            return self.push_screen(screen)
        return self.switch_screen(screen)

    def show_amount(self, notice: str = "", *, error: bool = False) -> None:
        """Back to the first step of a sale."""
        self.sale_amount = None
        self.sale_intent = None
        if self.locked:
            self._show(LockScreen())
            return
        screen = AmountScreen(notice)
        self._show(screen)
        if error:
            screen.call_after_refresh(screen.show_notice, notice, error=True)

    def show_pairing(self, *, first: bool) -> None:
        """The pairing form (first start, or to unlock after a 401)."""
        self._show(PairingScreen(first=first, username=self.status.username))

    def refresh_status(self) -> None:
        """Redraw the status bar of the screen on top."""
        for bar in self.screen.query(StatusBar):
            bar.refresh()

    # --- the scanner (called from its threads) -------------------------------------------

    def _from_scanner(self, event: Any) -> None:
        message = _scan_message(event)
        if message is None:
            return
        if threading.get_ident() == self._thread_id:
            self.post_message(message)
            return
        try:
            self.call_from_thread(self.post_message, message)
        except RuntimeError:
            # the app is shutting down; the scanner is disarmed by then
            log.debug("scanner event after the app stopped")

    @on(CameraStats)
    def _camera_stats(self, message: CameraStats) -> None:
        self.status.camera_state = message.camera_state
        self.status.fps = message.fps
        self.refresh_status()
        if message.last_error and isinstance(self.screen, PresentCardScreen):
            self.screen.set_scan_status(
                Text(t("present.camera_failed", message=shown_text(message.last_error, 120)))
            )

    @on(ScanRefusedMessage)
    def _scan_refused(self, message: ScanRefusedMessage) -> None:
        if isinstance(self.screen, PresentCardScreen):
            # Text, not markup: the reason may quote what the QR said
            self.screen.set_scan_status(
                Text(
                    t("present.refused", reason=shown_text(message.reason, 160)),
                    style="bold yellow",
                )
            )

    @on(TokenScanned)
    def _token_scanned(self, message: TokenScanned) -> None:
        if not isinstance(self.screen, PresentCardScreen) or self.sale_amount is None:
            return
        self._disarm()
        if self.services.demo is not None:
            self.services.demo.remove_phone()
        self.start_charge(self.sale_amount, message.token)

    def _disarm(self) -> None:
        if self.services.scanner is not None:
            self.services.scanner.disarm()

    # --- the sale -----------------------------------------------------------------------

    @on(AmountScreen.AmountEntered)
    def _amount_entered(self, message: AmountScreen.AmountEntered) -> None:
        if not self.sales_ready:
            # a "sale" worker now would cancel the start-up recovery: wait for it
            if isinstance(self.screen, AmountScreen):
                self.screen.wait_to_start()
            return
        self.begin_presenting(message.amount)

    @work(exclusive=True, group="sale", exit_on_error=False)
    async def begin_presenting(self, amount: int) -> None:
        """Arm the camera and ask for the card, unless an earlier sale is still open."""
        desk = self.services.desk
        if desk is None or self.locked:
            self.show_amount(t("amount.not_paired"), error=True)
            return
        if blocking_sales(desk.unresolved()):
            self.show_amount(t("amount.unresolved_blocks"), error=True)
            return
        self.sale_amount = amount
        self._show(
            PresentCardScreen(
                amount, timeout_s=self.present_timeout_s, live_preview=self.live_preview
            )
        )
        if self.services.scanner is not None:
            self.services.scanner.arm(allow_repeat=True)

    def cancel_presenting(self, *, timed_out: bool) -> None:
        """Esc on the card screen, or nobody showed a card in time."""
        if not isinstance(self.screen, PresentCardScreen):
            return
        scanner = self.services.scanner
        if scanner is not None and not scanner.armed:
            # a card was read: its charge is under way, its screen follows in a moment
            return
        self._disarm()
        self.show_amount(t("present.timeout") if timed_out else "", error=timed_out)

    @work(exclusive=True, group="sale", exit_on_error=False)
    async def start_charge(self, amount: int, token: str) -> None:
        """Charge through the ledger, then keep resolving until the outcome is known."""
        from qrpos.ledger import ChargeRefusedLocally

        desk = self.services.desk
        assert desk is not None
        self.receipts.pause_for_sale()
        screen = ChargingScreen(amount, abandon_after_s=self.abandon_after_s)
        charge = asyncio.ensure_future(
            desk.charge(
                amount, token, deadline_s=self.charge_deadline_s, on_progress=self._progress
            )
        )
        try:
            await asyncio.wait({charge}, timeout=CHARGING_SCREEN_AFTER_S)
            await self._show(screen)
            result = await charge
        except asyncio.CancelledError:
            charge.cancel()
            raise
        except ChargeRefusedLocally as exc:
            self.show_amount(t("amount.refused_locally", message=str(exc)), error=True)
            return
        self.sale_intent = result.intent_id
        await self.sale_flow.settle(result, screen)

    def _progress(self, progress: Any) -> None:
        self.post_message(ChargeProgressed(progress))

    @on(ChargeProgressed)
    def _charge_progressed(self, message: ChargeProgressed) -> None:
        # progress may come before the Charging screen is up (see CHARGING_SCREEN_AFTER_S)
        if isinstance(self.screen, ChargingScreen) and self.screen.is_mounted:
            self.screen.show_progress(message.progress.phase, message.progress.attempt)

    def ask_abandon(self) -> None:
        """The cashier pressed Esc on a long unclear sale: confirm, then abandon."""
        from qrpos.tui.screens.abandon import AbandonDialog

        def answered(confirmed: bool | None) -> None:
            if confirmed and self.sale_intent is not None:
                self.abandon_sale(self.sale_intent)

        self.push_screen(AbandonDialog(), answered)

    @work(exclusive=True, group="sale", exit_on_error=False)
    async def abandon_sale(self, intent_id: int) -> None:
        """Never send it again; the background settler refunds it if it was charged."""
        desk = self.services.desk
        assert desk is not None
        result = await desk.abandon(intent_id)
        self.sale_flow.show_result(result)

    # --- background work -------------------------------------------------------------

    @work(exclusive=True, group="health", exit_on_error=False)
    async def check_health(self) -> None:
        """`GET /health` now and then (sparingly): is the service reachable."""
        await self.sale_flow.check_health()

    @work(exclusive=True, group="settle", exit_on_error=False)
    async def settle_in_background(self) -> None:
        """Resolve open and abandoned sales when no sale is on screen."""
        await self.sale_flow.settle_background()

    @work(exclusive=True, group="sale", exit_on_error=False)
    async def start_recovery(self) -> None:
        """Before the first sale: settle what a crash or power cut left open."""
        self.receipts.start()
        await self.sale_flow.recover(RecoveryScreen())

    @work(exclusive=True, group="pairing", exit_on_error=False)
    async def pair(self, username: str, password: str, pin: str | None) -> None:
        """Verify the credentials with the service, store them, and resume sales."""
        await self.sale_flow.pair(username, password, pin)

    def lock(self) -> None:
        """Any 401: no sale until re-paired. The ledger keeps every pending intent."""
        self.locked = True
        self.status.starting = None
        self._disarm()
        self.sale_amount = None
        self._show(LockScreen())

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that failed is logged (never onto the screen) and the kiosk recovers
        to a safe screen: the ledger has kept whatever was in flight."""
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        log.error("worker %s failed: %r", event.worker.name, error, exc_info=error)
        if event.worker.group == "startup":
            # LedgerError, CameraUnavailable, ConfigError: the CLI prints the message
            self.startup_error = error
            self.exit(return_code=1)
            return
        if event.worker.group == "sale" and not self.locked:
            self.show_amount(t("amount.refused_locally", message=type(error).__name__), error=True)

    # --- keys outside the sale -----------------------------------------------------------

    def action_owner_menu(self) -> None:
        """F2: the owner's screens (history, reversals, end of day), if installed."""
        if isinstance(self.screen, PresentCardScreen | ChargingScreen | PairingScreen):
            return
        if not self.services_ready:
            self.notify(t("app.starting"), timeout=3)
            return
        try:
            module = importlib.import_module(OWNER_MODULE)
            screen = module.OwnerMenuScreen(self.services)
        except (ImportError, AttributeError):
            self.notify(t("app.owner_unavailable"), severity="warning")
            return
        self.push_screen(screen)

    def action_demo_phone(self) -> None:
        """Demo: the next customer holds up a phone."""
        if self.services.demo is None or isinstance(self.screen, PairingScreen):
            return
        who = self.services.demo.present_next_customer()
        self.notify(t("demo.presented", who=who), timeout=3)

    def action_demo_fault(self, kind: str) -> None:
        """Demo: make the sandbox fail the next request in this way."""
        if self.services.demo is None or isinstance(self.screen, PairingScreen):
            return
        description = self.services.demo.arm_fault(kind)
        self.notify(t("demo.fault_armed", fault=description), severity="warning", timeout=4)


def _scan_message(event: Any) -> Any:
    """The app message for a scan loop event (None for unknown events)."""
    from qrpos.scanner import ScanRefused, ScanStats, TokenRead

    if isinstance(event, TokenRead):
        return TokenScanned(event.token)
    if isinstance(event, ScanRefused):
        return ScanRefusedMessage(event.reason)
    if isinstance(event, ScanStats):
        return CameraStats(event.fps, event.camera_state, event.last_error)
    return None
