"""Messages between the owner's screens."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from qrpos.service import Transaction


@dataclass
class ReceiptsChanged(Message):
    """The VAT follow-up saw rows change (receipt issued, reversal voided, …)."""

    transactions: tuple[Transaction, ...]


@dataclass
class ReversalDone(Message):
    """A reversal ended as refunded: follow its receipt and show the row as reversed."""

    tx_id: str
