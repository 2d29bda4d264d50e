"""The outbox for a command: the configured desk (client + ledger) and one line per sale.

Shared by `qrpos charge`, `qrpos reverse`, `qrpos outbox` and `qrpos outbox review`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import TextIO

from qrpos.cli.common import client_from_config, config_from_args
from qrpos.ledger import ChargeDesk, Ledger, SaleProgress, SaleResult
from qrpos.present.format import elapsed
from qrpos.present.i18n import t
from qrpos.present.outcome import UNCLEAR_PHASES, phase_text
from qrpos.present.owner import money_word, state_word
from qrpos.present.words import words

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
    said = words(result.message_said or result.message)
    note = f" · {t('cli.outbox.last_try', detail=said)}" if said else ""
    # the ledger's one definition (an abandon whose refund landed is "refunded", and so is
    # a sale whose row was refunded by hand)
    state, charged = state_word(result.state), money_word(result.money.value)
    print(t("cli.sale", id=result.intent_id, state=state, charged=charged, tx=tx, note=note))


class ProgressLines:
    """While a person waits on a sale whose outcome is being checked: a line on stderr
    at each new step, and at least every `every_s` seconds while one lasts, in the
    charging screen's words with the seconds since the sale began. A sale answered at
    once prints nothing here."""

    def __init__(self, every_s: float = 5.0, out: TextIO | None = None) -> None:
        self.every_s = every_s
        self.out = out
        #: the last line said: which sale, which step, at which second of the sale
        self._said: tuple[int, str] | None = None
        self._said_at = 0.0

    def __call__(self, step: SaleProgress) -> None:
        if step.phase not in UNCLEAR_PHASES:
            return
        text = phase_text(step.phase, step.attempt)
        repeat = self._said == (step.intent_id, text)
        if repeat and step.elapsed_s - self._said_at < self.every_s:
            return
        self._said, self._said_at = (step.intent_id, text), step.elapsed_s
        line = t("cli.progress", id=step.intent_id, step=text, elapsed=elapsed(step.elapsed_s))
        print(line, file=self.out or sys.stderr, flush=True)
