"""Messages between the owner's screens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from qrpos.service import Transaction


@dataclass
class ReceiptsChanged(Message):
    """The VAT follow-up saw rows change (receipt issued, reversal voided, …)."""

    transactions: tuple[Transaction, ...]


@dataclass
class ReversalDone(Message):
    """A reversal ended as refunded: follow its receipt and show the row as reversed."""

    tx_id: str


@dataclass
class VatFollowUpPolled(Message):
    """A VAT follow-up poll ended: when the next one is (None: none planned), whether
    the service was busy (429), and how many reversals are still followed."""

    next_delay_s: float | None
    rate_limited: bool
    following: int
