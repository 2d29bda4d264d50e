"""Fixtures of the ledger tests: a real outbox file and a desk on the in-process sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from headless import cli_environment
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import TerminalCredentials
from qrpos.simulator.testing import asgi_transport


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger.open(tmp_path / "state" / "outbox.sqlite3")
    yield opened
    opened.close()


@pytest.fixture
async def desk(ledger: Ledger, asgi_client: TerminalClient) -> AsyncIterator[ChargeDesk]:
    yield ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())


@pytest.fixture
def cli_env(tmp_path: Path, live_url: str, terminal: TerminalCredentials) -> dict[str, str]:
    """The environment of a `qrpos` process run against the live sandbox (`headless.py`)."""
    return cli_environment(tmp_path, live_url, terminal)


@pytest.fixture
async def other_till(terminal: TerminalCredentials, sim_app: Any) -> AsyncIterator[TerminalClient]:
    """Another install on this kiosk's credentials (a second till, a cloned card): its
    charges are rows of the same terminal that no sale of this outbox owns."""
    async with TerminalClient(
        "http://127.0.0.1",
        terminal.username,
        terminal.password,
        transport=asgi_transport(sim_app),
    ) as client:
        yield client
