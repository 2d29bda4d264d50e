"""Everything the kiosk UI talks to, handed into `KioskApp` by its caller.

The UI holds no I/O of its own: the ledger's `ChargeDesk`, the service client, the
scan loop and (in the demo) the sandbox controls arrive here, so tests and `qrpos demo`
can hand in real parts wired differently. This is the App's side of the wiring
(`qrpos.kiosk` builds them); importing it does not import Textual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from qrpos.config import Config
from qrpos.quick_prices import QuickPriceBook

if TYPE_CHECKING:
    from qrpos.ledger import ChargeDesk
    from qrpos.peripherals.display_port import CustomerDisplay
    from qrpos.peripherals.printing import Printing
    from qrpos.peripherals.sound import Sounds
    from qrpos.scanner import ScanLoop, VirtualPhone
    from qrpos.service import TerminalClient


def utc_now() -> datetime:
    """The wall clock, aware, in UTC (the default `KioskServices.clock`)."""
    return datetime.now(UTC)


class DemoControls(Protocol):
    """What `qrpos demo` lets the person at the keyboard do to the sandbox world."""

    #: fault kinds the demo can arm, in the order their keys are listed
    fault_kinds: tuple[str, ...]

    def present_next_customer(self) -> str:
        """Hold the next demo customer's phone (current token) up to the virtual camera;
        returns a short description for the screen (never the token)."""
        ...

    def keep_phone_in_view(self) -> None:
        """The next customer leaves the phone in view after paying (its pass refreshes)."""
        ...

    def token_read(self) -> None:
        """The kiosk read the phone's code: the customer reacts (puts it away, or not)."""
        ...

    def arm_fault(self, kind: str) -> str:
        """Arm one sandbox fault for the next request; returns a description."""
        ...


class ScanEventRelay:
    """The scan loop's `on_event` callback, connected to the app once it runs.

    `ScanLoop` is built before the app exists and calls back from its own threads; the
    app connects a target (which marshals onto its event loop). Events arriving while
    nothing is connected are dropped: the scanner is disarmed then anyway.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._target: Callable[[Any], None] | None = None

    def connect(self, target: Callable[[Any], None] | None) -> None:
        """Route events to `target` (None disconnects)."""
        with self._lock:
            self._target = target

    def __call__(self, event: Any) -> None:
        with self._lock:
            target = self._target
        if target is not None:
            target(event)


def _no_client_factory(username: str, password: str) -> TerminalClient:
    raise RuntimeError("this kiosk was started without a way to pair a terminal")


def _no_pairing_store(username: str, password: str) -> str:
    raise RuntimeError("this kiosk was started without a credential store")


@dataclass
class ServiceAddress:
    """The service's base URL that `make_client` uses, held where the pairing form can set
    it: a fresh card has none until the installer types it (None until then)."""

    value: str | None = None


@dataclass
class KioskServices:
    """The kiosk's collaborators. `desk`/`client` are None until the terminal is paired."""

    config: Config
    desk: ChargeDesk | None = None
    client: TerminalClient | None = None
    scanner: ScanLoop | None = None
    virtual_phone: VirtualPhone | None = None
    demo: DemoControls | None = None
    #: the kiosk's notion of now (aware); tests pass a fixed clock
    clock: Callable[[], datetime] = utc_now
    #: the scan loop's `on_event`; the app connects itself to it while it runs
    scan_events: ScanEventRelay = field(default_factory=ScanEventRelay)
    #: (username, password) -> a client for those credentials (pairing, re-pairing)
    make_client: Callable[[str, str], TerminalClient] = _no_client_factory
    #: (username, password) -> where it was stored; persists a verified pairing
    store_pairing: Callable[[str, str], str] = _no_pairing_store
    #: the base URL `make_client` uses, typed on the pairing form; None: fixed (the demo,
    #: tests), the form asks no address
    service_address: ServiceAddress | None = None
    #: client -> the desk over the outbox, for a first pairing (desk was None)
    open_desk: Callable[[TerminalClient], ChargeDesk] | None = None
    #: the till's tones (approved / declined / attention); None: the terminal bell only
    sounds: Sounds | None = None
    #: the receipt printer's queue and worker (started); None: no printer set
    printing: Printing | None = None
    #: the customer display's worker (started); None: no customer display set
    customer_display: CustomerDisplay | None = None
    #: the owner's quick prices (read from the state dir on first use)
    quick_prices: QuickPriceBook = field(init=False)

    def __post_init__(self) -> None:
        self.quick_prices = QuickPriceBook(self.config.state_dir)

    @property
    def paired(self) -> bool:
        """True when there is a client and a desk to take sales with."""
        return self.client is not None and self.desk is not None

    def install_client(self, client: TerminalClient) -> None:
        """Use `client` from now on (after pairing): the desk keeps every pending intent."""
        self.client = client
        if self.desk is not None:
            self.desk.replace_client(client)
        elif self.open_desk is not None:
            self.desk = self.open_desk(client)
