"""`qrpos demo`: the kiosk wired to an embedded sandbox and the virtual-phone camera.

Needs no camera, no credentials and no network: the sandbox runs on a free loopback
port in a thread, its demo terminal's credentials go straight to the client (no keyring),
and the outbox lives in a throw-away state dir. Does not import Textual.
The demo's hands (`SandboxDemo`) reach the app as `KioskServices.demo`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

from qrpos import manager_pin
from qrpos.config import Config
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.present.format import format_mnt
from qrpos.scanner import ScanLoop, VirtualPhone, make_decoder
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app, serve_in_thread
from qrpos.tui.services import KioskServices, ScanEventRelay, utc_now

#: the demo's customers: wallet balances in MNT (the last one cannot pay much)
DEMO_BALANCES = (250_000, 120_000, 60_000, 3_000)
#: how long the counter is empty between one customer's phone and the next one's
SWAP_GAP_S = 1.2
#: faults the demo's keys arm, each on the next charge request only
DEMO_FAULTS: tuple[str, ...] = ("drop_after_commit", "error_after_commit", "rate_limit")
_FAULT_NAMES = {
    "drop_after_commit": "reply lost after the charge",
    "error_after_commit": "HTTP 500 after the charge",
    "rate_limit": "HTTP 429",
}


class SandboxDemo:
    """The demo's hands: customers holding up phones, and a fault switch on the sandbox."""

    fault_kinds: tuple[str, ...] = DEMO_FAULTS

    def __init__(self, sandbox: Sandbox, phone: VirtualPhone, wallet_ids: Sequence[str]) -> None:
        self.sandbox = sandbox
        self.phone = phone
        self.wallet_ids = list(wallet_ids)
        self._next = 0
        #: the wallet whose pass the phone shows (None: no phone in view)
        self._showing: str | None = None
        #: the next customer keeps the phone in view after paying (the `h` key)
        self.keep_in_view = False
        #: the token the phone shows now (None: no phone in view); never displayed
        self.shown: str | None = None
        self._removed_at = -SWAP_GAP_S
        #: how long a phone left in view takes to notice its pass was charged and show
        #: the refreshed token (a real wallet app: from a moment to several seconds)
        self.refresh_after_s = 0.25

    def present_next_customer(self) -> str:
        """The next customer shows the pass with its *current* token (it rotates after
        each charge, so a repeat customer shows a fresh one). A phone still in view is
        taken away first, and the next one comes up a moment later, as hands do."""
        index = self._next % len(self.wallet_ids)
        self._next += 1
        info = self.sandbox.wallet(self.wallet_ids[index])
        if self.phone.showing:
            self._remove()
        # the counter stays empty a moment between two customers' phones
        wait = self._removed_at + SWAP_GAP_S - time.monotonic()
        if wait > 0:
            self._later(wait, lambda: self._show(info.qr_token))
        else:
            self._show(info.qr_token)
        self._showing = self.wallet_ids[index]
        return f"#{index + 1} ({format_mnt(info.balance_mnt)})"

    def keep_phone_in_view(self) -> None:
        """The next customer leaves the phone in front of the camera after paying, and its
        pass refreshes to the new token (the case the kiosk must not charge twice)."""
        self.keep_in_view = True

    def token_read(self) -> None:
        """The kiosk read the code: the customer puts the phone away, unless told to keep
        it in view; then the pass shows its refreshed token once the charge is through."""
        wallet_id = self._showing
        if not self.keep_in_view or wallet_id is None:
            self._remove()
            return
        self.keep_in_view = False
        old = self.sandbox.wallet(wallet_id).qr_token

        def refresh(tries: int = 40) -> None:
            token = self.sandbox.wallet(wallet_id).qr_token
            if token != old:
                self._show(token)
            elif tries:
                self._later(0.25, lambda: refresh(tries - 1))

        self._later(self.refresh_after_s, refresh)

    def _remove(self) -> None:
        self.phone.remove()
        self._showing = self.shown = None
        self._removed_at = time.monotonic()

    def _show(self, token: str) -> None:
        self.phone.present(token)
        self.shown = token

    def _later(self, delay_s: float, action: Callable[[], None]) -> None:
        timer = threading.Timer(delay_s, action)
        timer.daemon = True
        timer.start()

    def arm_fault(self, kind: str) -> str:
        """Make the sandbox fail the next charge request this way."""
        self.sandbox.arm_fault(kind, operation="charge")
        return _FAULT_NAMES.get(kind, kind)


@dataclasses.dataclass
class DemoWorld:
    """A running demo: the services for the kiosk and the sandbox behind them."""

    services: KioskServices
    sandbox: Sandbox
    base_url: str
    wallet_ids: list[str]


@contextlib.contextmanager
def demo_world(
    *,
    state_dir: Path | None = None,
    language: str = "mn",
    clock: Callable[[], datetime] = utc_now,
    policy: RetryPolicy | None = None,
    balances: Sequence[int] = DEMO_BALANCES,
    camera_fps: float = 15.0,
    on_step: Callable[[str], None] = lambda step: None,
    base: Config | None = None,
    printer: bool = False,
    peripherals: bool = False,
) -> Iterator[DemoWorld]:
    """Start the sandbox and build the kiosk's services; everything stops on exit.
    `on_step` hears each part as it starts (the keys of `qrpos.tui.startup.STEPS`);
    `base` carries the person's settings (where choices and exports go, a pinned
    language) into the demo's own config. With `printer`, slips print on the printer
    the person's settings name, else on a virtual one: a file in the state dir, each slip
    also shown on screen. With `peripherals`, the customer display and the handheld
    scanner the settings name work as in `qrpos run` (the customer's view is shown on
    screen whatever the settings: the demo's virtual customer display)."""
    with contextlib.ExitStack() as stack:
        on_step("service")
        if state_dir is None:
            state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="qrpos-demo-")))
        sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
        stack.callback(sandbox.close)
        creds = sandbox.create_terminal("m_demo")
        wallets = [sandbox.create_wallet(b).wallet_id for b in balances]
        base_url = stack.enter_context(serve_in_thread(create_app(sandbox)))

        def make_client(username: str, password: str) -> TerminalClient:
            return TerminalClient(base_url, username, password, timeout_s=5.0)

        client = make_client(creds.username, creds.password)
        if not manager_pin.has_pin(state_dir):
            # the owner screens are part of the demo: reversals need a known PIN
            manager_pin.set_pin(state_dir, manager_pin.DEMO_PIN)
        on_step("outbox")
        ledger = Ledger.open(state_dir / "outbox.sqlite3")
        stack.callback(ledger.close)
        desk = ChargeDesk(ledger, client, policy=policy, clock=clock)
        on_step("camera")
        phone = VirtualPhone(fps=camera_fps)
        relay = ScanEventRelay()
        # the person's decoder (`[scanner] decoder`), as `qrpos run` reads codes
        decoder = make_decoder((base.scanner if base is not None else {}).get("decoder"))
        scanner = ScanLoop(phone, decoder, relay)
        stack.callback(scanner.stop)
        config = dataclasses.replace(
            base or Config(),
            base_url=base_url,
            username=creds.username,
            state_dir=state_dir,
            language=language,
        )
        services = KioskServices(
            config=config,
            desk=desk,
            client=client,
            scanner=scanner,
            virtual_phone=phone,
            demo=SandboxDemo(sandbox, phone, wallets),
            clock=clock,
            scan_events=relay,
            make_client=make_client,
            store_pairing=lambda username, password: "memory (demo)",
        )
        if printer:
            from qrpos.kiosk.peripherals import till_printing
            from qrpos.peripherals.printer import FilePort

            # the virtual printer keeps the last slip's text (and the screen shows it): no
            # raster is drawn, so the demo carries no drawing library in its memory
            virtual = FilePort(
                state_dir / "demo-printer.txt", name="virtual", append=False, text=True
            )
            services.printing = till_printing(config, ledger, stack, fallback=virtual)
        if peripherals:
            from qrpos.kiosk.peripherals import till_customer_display, till_handheld

            services.customer_display = till_customer_display(config, stack, scanner=scanner)
            handheld = till_handheld(config, scanner)
            if handheld is not None:
                handheld.start()
                stack.callback(handheld.stop)
        yield DemoWorld(services, sandbox, base_url, wallets)
