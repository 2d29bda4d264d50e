"""The outbox for a command: the configured desk (client + ledger) and one line per sale.

Shared by `qrpos charge`, `qrpos reverse`, `qrpos outbox` and `qrpos outbox review`.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator

from qrpos.cli.common import client_from_config, config_from_args
from qrpos.ledger import ChargeDesk, Ledger, SaleResult

DEFAULT_DEADLINE_S = 60.0


@contextlib.asynccontextmanager
async def open_desk(args: argparse.Namespace) -> AsyncIterator[ChargeDesk]:
    """The configured desk (client + outbox); raises SETUP_ERRORS or LedgerError."""
    config = config_from_args(args)
    client = client_from_config(config)
    try:
        ledger = Ledger.open(config.ledger_path)
        try:
            yield ChargeDesk(ledger, client)
        finally:
            ledger.close()
    finally:
        await client.aclose()


def print_sale(result: SaleResult) -> None:
    """One line about a sale for a person reading stderr."""
    charged = {True: "charged", False: "not charged", None: "not yet known"}[result.charged]
    tx = f" as {result.transaction.id}" if result.transaction else ""
    note = f" ({result.message})" if result.message else ""
    print(f"sale #{result.intent_id}: {result.state} — {charged}{tx}{note}")
