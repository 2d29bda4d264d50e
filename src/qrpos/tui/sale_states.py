"""The sale's states and their legal moves, the timings it waits by, and which open
sales keep a new one from starting. Textual-free, and no I/O; `qrpos.tui.sale` owns the
sale and does the work of each move.

    STARTING ──► RECOVERING ──► READY ──► PRESENTING ──► CHARGING ──► RESULT ──► READY
        │  └──────────────────►  ▲ │          │              │           │
        └─► PAIRING ◄── LOCKED ◄─┴─┴──────────┴──────────────┴───────────┘ (any 401)

`MOVES` is the whole table; `Sale.move` refuses any other move (`IllegalSaleMove`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qrpos.ledger import IntentView


class SaleState(Enum):
    """Where the kiosk's sale stands; each state has one screen."""

    STARTING = "starting"  # services or the start-up recovery not in yet
    PAIRING = "pairing"  # the pairing form (first start, or after a 401)
    RECOVERING = "recovering"  # sales left open by a crash are settled first
    READY = "ready"  # the amount screen: a sale may start
    PRESENTING = "presenting"  # the camera is armed, the customer shows the pass
    CHARGING = "charging"  # the charge is sent and resolved until its outcome is known
    RESULT = "result"  # the outcome, until the cashier moves on
    LOCKED = "locked"  # a 401: no sale until paired again


S = SaleState
#: the legal moves; any other raises `IllegalSaleMove` (a bug, logged, never a lost sale)
MOVES: dict[SaleState, frozenset[SaleState]] = {
    S.STARTING: frozenset({S.PAIRING, S.RECOVERING, S.READY, S.LOCKED}),
    S.PAIRING: frozenset({S.PAIRING, S.RECOVERING, S.READY, S.LOCKED}),
    S.RECOVERING: frozenset({S.READY, S.LOCKED}),
    S.READY: frozenset({S.READY, S.PRESENTING, S.LOCKED}),
    S.PRESENTING: frozenset({S.CHARGING, S.READY, S.LOCKED}),
    S.CHARGING: frozenset({S.RESULT, S.READY, S.LOCKED}),
    S.RESULT: frozenset({S.READY, S.LOCKED}),
    S.LOCKED: frozenset({S.PAIRING, S.LOCKED}),
}
#: a sale is under way in these states: no background polling, no owner menu
UNDER_WAY = frozenset({S.PRESENTING, S.CHARGING})


def blocking_sales(views: Sequence[IntentView]) -> list[IntentView]:
    """The sales whose outcome is still unknown (abandoned or queued refunds do not block)."""
    from qrpos.ledger import IntentState

    blocking = (IntentState.PENDING, IntentState.UNRESOLVED, IntentState.CREDENTIALS_REJECTED)
    return [v for v in views if v.kind == "charge" and v.state in blocking and v.charged is None]


@dataclass(frozen=True)
class SaleTimings:
    """How long the sale waits for things (tests shorten them)."""

    charge_deadline_s: float = 20.0
    resolve_every_s: float = 3.0
    #: the Charging screen is announced this long after the card is read (or once the charge
    #: settles): drawn first, it held the commit and POST back ~20 ms (scan_to_send.py)
    charging_screen_after_s: float = 0.1
