"""Transactions shaped exactly as the service sends them, for the pure-arithmetic tests."""

from __future__ import annotations

import itertools
from datetime import datetime

from qrpos.service.models import Transaction, format_rfc3339, parse_transaction

_ids = itertools.count(1)


def tx(
    created_at: datetime,
    amount: int,
    *,
    status: str = "COMPLETED",
    vat: str = "pending",
    receipt: str = "",
    tx_id: str | None = None,
) -> Transaction:
    return parse_transaction(
        {
            "id": tx_id or f"tx_t{next(_ids):06d}",
            "amountMNT": amount,
            "status": status,
            "type": "CHARGE",
            "vatReceiptID": receipt,
            "vatStatus": vat,
            "terminalID": "ter_test0001",
            "createdAt": format_rfc3339(created_at),
        }
    )
