"""The outbox for a command: the configured desk (client + ledger) and one line per sale.

Shared by `qrpos charge`, `qrpos reverse`, `qrpos outbox` and `qrpos outbox review`.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator

from qrpos.cli.common import client_from_config, config_from_args
from qrpos.ledger import ChargeDesk, Ledger, SaleResult
from qrpos.present.i18n import t
from qrpos.present.owner import charged_word, state_word

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
    """One line about a sale for a person, in the configured language; the technical
    note of its last try (the service's or the outbox's words) as it came."""
    tx = t("cli.sale_tx", tx=result.transaction.id) if result.transaction else ""
    note = f" · {t('cli.outbox.last_try', detail=result.message)}" if result.message else ""
    state, charged = state_word(result.state), charged_word(result.charged)
    print(t("cli.sale", id=result.intent_id, state=state, charged=charged, tx=tx, note=note))
