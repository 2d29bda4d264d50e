"""The cashier's kiosk: Amount → Present card → Charging → Result → Amount.

The app holds no I/O of its own: everything it talks to arrives in `KioskServices`, and
the sale is owned by `qrpos.tui.sale.Sale`, whose moves run in this app's workers. The app
is the screen keeper: it puts up the screen of each `Sale.Moved`, relays progress to the
screen on top, keeps the one reactive `status` the status bars watch, and hands what the
cashier did (messages posted by the screens) to the sale. Given a `ServicesStarter`, it
draws the Amount screen first and builds its services in a thread worker.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.binding import Binding, BindingType
from textual.worker import Worker, WorkerState

from qrpos import notify, spec
from qrpos.heap import IdleCollector, freeze_startup_heap
from qrpos.present.i18n import set_language, t
from qrpos.present.language import remembered_language
from qrpos.tui.language import switch_language
from qrpos.tui.messages import (
    AbandonAsked,
    HeldCardAccepted,
    NextSale,
    PairingRequested,
    PairingSubmitted,
    PresentCancelled,
    SaleCharged,
    ShiftChanged,
    TokenScanned,
)
from qrpos.tui.parts import TillParts
from qrpos.tui.receipts import ReceiptFollower
from qrpos.tui.sale import Sale, SaleState, SaleTimings
from qrpos.tui.scan_events import scan_message
from qrpos.tui.screens.abandon import AbandonDialog
from qrpos.tui.screens.amount import AmountScreen
from qrpos.tui.services import KioskServices
from qrpos.tui.startup import ServicesStarter
from qrpos.tui.widgets.status_bar import KioskStatus

if TYPE_CHECKING:  # the ledger loads after the first screen is drawn
    pass

log = logging.getLogger("qrpos.tui")


class KioskApp(TillParts):
    """The kiosk. Timings are parameters so tests can shorten them; defaults suit a shop."""

    CSS_PATH = "app.tcss"
    TITLE = "qrpos"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "owner_menu", "owner", show=False),
        Binding("o", "owner_menu", "owner", show=False),
        Binding("L", "language", "language", show=False),
        Binding("p", "demo_phone", "phone", show=False),
        Binding("h", "demo_hold", "hold", show=False),
        Binding("c", "demo_panel", "demo panel", show=False),
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
        #: why the starter failed (the CLI reports it after the app exits)
        self.startup_error: BaseException | None = None
        self.present_timeout_s = present_timeout_s
        self.abandon_after_s = abandon_after_s
        self.result_linger_s = result_linger_s
        self.health_every_s = health_every_s
        self.settle_every_s = settle_every_s
        self.live_preview = live_preview
        self._ready_sent = False
        self._background_started = False
        #: the owner of the sale: its state and moves (see qrpos.tui.sale)
        self.sale = Sale(
            lambda: self.services,
            self.post_message,
            SaleTimings(charge_deadline_s=charge_deadline_s, resolve_every_s=resolve_every_s),
        )
        #: VAT receipts followed all day (the owner's screens use it too)
        self.heap = IdleCollector()
        self.receipts = ReceiptFollower(
            self, lambda: self.services, interval_s=receipts_every_s, busy=self.sale_under_way
        )
        config = services.config
        remembered = None if config.language_pinned else remembered_language(config.settings_home)
        language = remembered or config.language
        set_language(language)
        known = services.client.username if services.client else None
        self.set_reactive(
            KioskApp.status,
            KioskStatus(
                username=known or (services.config.username if starter else None),
                language=language,
                now=services.clock(),
            ),
        )

    # --- start and stop -----------------------------------------------------------------

    def on_mount(self) -> None:
        period = notify.watchdog_period_s()
        if period:
            self.set_interval(period, notify.watchdog_ping)
        self.set_interval(1.0, self._tick)
        if self.starter is not None:
            # the real first screen; the services follow once it is drawn (on_ready)
            self.status = replace(self.status, starting="service")
            self.push_screen(AmountScreen())
            return
        self._begin()

    def _begin(self) -> None:
        """Connect the scanner, then pair or recover: the services are in."""
        self.services.scan_events.connect(self._from_scanner)
        self._connect_printer()
        self._connect_display()
        self.sale.publish()  # the customer display leaves "not connected" for the idle view
        self.show_cashier()
        if self.services.scanner is not None:
            self._start_scanner()
        if not self.services.paired:
            self.status = replace(self.status, starting=None)
            self.sale.to_pairing()
            return
        if self.starter is not None:
            self.status = replace(self.status, starting="recovery")
        self.start_background()
        self.start_recovery()
        freeze_startup_heap()  # what start-up made is not walked again (issue 49)

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
        self.status = replace(self.status, starting=step)

    def install_services(self, services: KioskServices) -> None:
        """The starter's services are in: use them, then pair or recover as at start."""
        self.services = services
        self.services_ready = True
        username = services.client.username if services.client else None
        self.status = replace(self.status, username=username)
        if isinstance(self.screen, AmountScreen) and services.demo is not None:
            self.screen.show_demo_keys()
        self.fit_demo_panel(self.size.width)
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
        return self.sale.under_way

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

    @on(SaleCharged)
    def _sale_charged(self, message: SaleCharged) -> None:
        self.receipts.charged(message.transaction)
        printing = self.services.printing
        if printing is not None:
            # queued off the event loop (a write to the outbox); printed by its worker
            tx = message.transaction
            self.run_worker(
                lambda: printing.print_sale(tx), thread=True, group="printer", exit_on_error=False
            )

    # --- who is on (cashiers' shifts) ---------------------------------------------------

    @work(exclusive=True, group="shift", exit_on_error=False)
    async def show_cashier(self) -> None:
        """The status bar names the cashier whose shift is open (one resumed after a
        restart too)."""
        desk = self.services.desk
        if desk is None:
            return
        from qrpos.ledger.shifts import current_shift
        from qrpos.reports.localday import local_day_of, to_local

        shift = await asyncio.to_thread(current_shift, desk.ledger)
        name = shift.cashier if shift else None
        if shift is not None and local_day_of(shift.opened_at) < local_day_of(
            self.services.clock()
        ):
            # left open across midnight: it says so (the owner takes its Z)
            name = t(
                "status.shift_since", name=shift.cashier, day=f"{to_local(shift.opened_at):%m-%d}"
            )
        self.status = replace(self.status, cashier=name)

    @on(ShiftChanged)
    def _shift_changed(self, message: ShiftChanged) -> None:
        self.status = replace(self.status, cashier=message.cashier)

    # --- the scanner (called from its threads) -------------------------------------------

    def _from_scanner(self, event: Any) -> None:
        message = scan_message(event)
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

    @on(TokenScanned)
    def _token_scanned(self, message: TokenScanned) -> None:
        if self.sale.token_read(message.token):
            self.charge(message.token)

    # --- what the cashier did, handed to the sale --------------------------------------

    @on(AmountScreen.AmountEntered)
    def _amount_entered(self, message: AmountScreen.AmountEntered) -> None:
        if self.sale.state is not SaleState.READY:
            # a "sale" worker now would cancel the start-up recovery: wait for it
            if isinstance(self.screen, AmountScreen):
                self.screen.wait_to_start()
            return
        self.begin_presenting(message.amount)

    @on(AmountScreen.PricesWanted)
    def _prices_wanted(self, message: AmountScreen.PricesWanted) -> None:
        screen = message.screen
        if screen.is_mounted:
            screen.show_prices(self.services.quick_prices.prices(), self.sale.last_amount)

    @work(exclusive=True, group="sale", exit_on_error=False)
    async def begin_presenting(self, amount: int) -> None:
        """Arm the camera and ask for the card, unless an earlier sale is still open."""
        await self.sale.present(amount)

    @on(PresentCancelled)
    def _present_cancelled(self, message: PresentCancelled) -> None:
        self.sale.cancel(timed_out=message.timed_out)

    @on(HeldCardAccepted)
    def _held_card_accepted(self) -> None:
        self.sale.accept_held_card()

    @work(exclusive=True, group="sale", exit_on_error=False)
    async def charge(self, token: str) -> None:
        """Charge through the ledger, then keep resolving until the outcome is known."""
        await self.sale.charge(token)

    @on(AbandonAsked)
    def _abandon_asked(self) -> None:
        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self.abandon_sale()

        self.push_screen(AbandonDialog(), answered)

    @work(exclusive=True, group="sale", exit_on_error=False)
    async def abandon_sale(self) -> None:
        """Never send it again; the background settler refunds it if it was charged."""
        await self.sale.abandon()

    @on(NextSale)
    def _next_sale(self, message: NextSale) -> None:
        if self.sale.state is SaleState.RESULT:
            self.carried_keys = message.carried
            self.sale.next_sale()
            self.show_cashier()  # a shift opened or closed elsewhere (`qrpos shift`)

    @on(PairingRequested)
    def _pairing_requested(self) -> None:
        if self.sale.state is SaleState.LOCKED:
            self.sale.to_pairing()

    @on(PairingSubmitted)
    def _pairing_submitted(self, message: PairingSubmitted) -> None:
        self.pair(message.username, message.password, message.pin, message.base_url)

    @work(exclusive=True, group="pairing", exit_on_error=False)
    async def pair(
        self, username: str, password: str, pin: str | None, base_url: str | None = None
    ) -> None:
        """Verify the credentials with the service, store them, and resume sales."""
        if await self.sale.pair(username, password, pin, base_url):
            self.start_background()
            self.start_recovery()

    # --- background work -------------------------------------------------------------

    @work(exclusive=True, group="health", exit_on_error=False)
    async def check_health(self) -> None:
        """`GET /health` now and then (sparingly): is the service reachable."""
        await self.sale.check_health()

    @work(exclusive=True, group="settle", exit_on_error=False)
    async def settle_in_background(self) -> None:
        """Resolve open and abandoned sales when no sale is on screen."""
        await self.sale.settle_background()

    @work(exclusive=True, group="sale", exit_on_error=False)
    async def start_recovery(self) -> None:
        """Before the first sale: settle what a crash or power cut left open."""
        self.receipts.start()
        if await self.sale.recover():
            # abandoned sales still watched and queued refunds settle in the background
            self.settle_in_background()

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
        if event.worker.group == "sale" and error is not None:
            self.sale.failed(error)

    # --- keys outside the sale -----------------------------------------------------------

    def action_owner_menu(self) -> None:
        """F2: the owner's screens (history, reversals, end of day)."""
        if self.sale.under_way or self.sale.state is SaleState.PAIRING:
            return
        if any(screen.has_class("owner") for screen in self.screen_stack):
            return  # already in the owner's screens: one menu, never a second on top
        if not self.services_ready:
            self.notify(t("app.starting"), timeout=3)
            return
        # loaded on first use: the reports and the history cache are not needed before
        from qrpos.tui.screens.owner.menu import OwnerMenuScreen

        self.push_screen(OwnerMenuScreen(self.services, follower=self.receipts))

    def action_help_quit(self) -> None:
        """Ctrl+C does not quit a kiosk: say in the screen's language what does."""
        self.notify(t("app.quit_hint"), title=t("app.quit_title"), timeout=4)

    def action_language(self) -> None:
        """`L`: the next language, on every screen at once, remembered across restarts."""
        language = switch_language(self, self.services.config.settings_home)
        self.status = replace(self.status, language=language)
        self.sale.publish()  # the customer's words follow the till's language

    def action_demo_phone(self) -> None:
        """Demo: the next customer holds up a phone."""
        if self.services.demo is None or self.sale.state is SaleState.PAIRING:
            return
        who = self.services.demo.present_next_customer()
        self.demo_notice(t("demo.presented", who=who))

    def action_demo_hold(self) -> None:
        """Demo: the next customer leaves the phone in view after paying."""
        if self.services.demo is None or self.sale.state is SaleState.PAIRING:
            return
        self.services.demo.keep_phone_in_view()
        self.demo_notice(t("demo.hold"))

    def action_demo_fault(self, kind: str) -> None:
        """Demo: make the sandbox fail the next request in this way."""
        if self.services.demo is None or self.sale.state is SaleState.PAIRING:
            return
        self.services.demo.arm_fault(kind)
        fault = t(f"demo.faults.{kind}")  # in the screen's words, not the sandbox's
        self.demo_notice(t("demo.fault_armed", fault=fault))

    def action_demo_panel(self) -> None:
        """Demo: show or hide the panel of the customer's view, the slip and the notices."""
        self.toggle_demo_panel()

    def on_resize(self, event: events.Resize) -> None:
        self.fit_demo_panel(event.size.width)
