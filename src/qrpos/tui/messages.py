"""App-wide messages: small dataclasses posted by the scanner relay, the screens and the
sale's owner (`qrpos.tui.sale`). Screens only post; the app and the sale answer.

Widget-local messages live as nested classes of their widget (`AmountScreen.AmountEntered`).
Tests capture these with `app.run_test(message_hook=...)` instead of polling the screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from qrpos.tui.keypad import KeypadAction

if TYPE_CHECKING:
    from qrpos.ledger import SaleProgress
    from qrpos.present.customer import CustomerView
    from qrpos.service import Transaction

# --- from the scan loop's threads ------------------------------------------------------


@dataclass
class TokenScanned(Message):
    """The scan loop read a wallet token (the exact text; never displayed in full)."""

    token: str = field(repr=False)


@dataclass
class ScanRefusedMessage(Message):
    """The scan loop read a code it will not hand over. `code` picks the catalogue text;
    `reason` (English, from the scanner) is shown only for a code the catalogue lacks."""

    reason: str
    code: str | None = None


@dataclass
class CameraStats(Message):
    """Frames per second and camera state; a burst coalesces to the latest one."""

    fps: float | None
    camera_state: str
    last_error: str | None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CameraStats)


# --- from the screens to the sale's owner ---------------------------------------------


@dataclass
class PresentCancelled(Message):
    """Esc on the card screen (`timed_out` False), or nobody showed a card in time."""

    timed_out: bool


@dataclass
class HeldCardAccepted(Message):
    """The cashier confirmed on screen that the card left in view is to be charged."""


@dataclass
class AbandonAsked(Message):
    """Esc on a long unclear charge: the app asks for a confirmation."""


@dataclass
class NextSale(Message):
    """The result has been seen (a key, or its time is up): back to the amount.

    `carried`: the keypad keys typed on the result, in order (the cashier keying the next
    amount at once). The list is the result screen's own: keys that reach it before the
    amount screen is up are appended, and the amount screen replays them all.
    """

    def __init__(self, carried: list[tuple[KeypadAction, str]] | None = None) -> None:
        super().__init__()
        self.carried: list[tuple[KeypadAction, str]] = carried if carried is not None else []


@dataclass
class PairingRequested(Message):
    """Enter on the lock screen: open the pairing form."""


@dataclass
class PairingSubmitted(Message):
    """The pairing form is filled in; the password never appears in a repr or a log."""

    username: str
    password: str = field(repr=False)
    pin: str | None = field(repr=False)
    #: the service's address typed on the form (None: the form did not ask for it)
    base_url: str | None = None


# --- from the sale's owner to the app (its own `Sale.Moved` is nested in `Sale`) -------


@dataclass
class ChargeProgressed(Message):
    """The ledger reports a step of a charge (sending, retrying, checking history)."""

    progress: SaleProgress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ChargeProgressed)


@dataclass
class ChargeUnclear(Message):
    """The charge's outcome is unknown; the kiosk keeps resolving it."""


@dataclass
class RecoveryLeft(Message):
    """A recovery pass at start left `count` sales open; the kiosk tries again."""

    count: int


@dataclass
class PairingAnswered(Message):
    """What the pairing form should say (a catalogue key and its fields)."""

    key: str
    fields: dict[str, str] = field(default_factory=dict)
    error: bool = True


@dataclass
class SaleCharged(Message):
    """A sale ended charged: its VAT receipt is followed from now on."""

    transaction: Transaction


@dataclass
class StatusChanged(Message):
    """Something the status bar shows changed; `None` fields are left as they were."""

    unresolved: int | None = None
    online: bool | None = None
    #: the start-up step still running (`startup.<key>`), "" once sales can start
    starting: str | None = None
    username: str | None = None
    #: another install uses this terminal's credentials (True) or the owner cleared it
    foreign: bool | None = None


class ShiftChanged(Message):
    """A shift opened or closed: the status bar names who is on (None: nobody)."""

    def __init__(self, cashier: str | None) -> None:
        super().__init__()
        self.cashier = cashier


@dataclass
class CustomerViewChanged(Message):
    """The customer's view of the sale changed (the demo's panel shows it); a burst
    coalesces to the latest one."""

    view: CustomerView

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CustomerViewChanged)
