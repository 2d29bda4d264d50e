"""Fixtures of the ledger tests: a real outbox file and a desk on the in-process sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.service import TerminalClient


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger.open(tmp_path / "state" / "outbox.sqlite3")
    yield opened
    opened.close()


@pytest.fixture
async def desk(ledger: Ledger, asgi_client: TerminalClient) -> AsyncIterator[ChargeDesk]:
    yield ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
