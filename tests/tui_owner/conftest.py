"""The owner's screens in a real Textual app, over a real outbox and the sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from owner_harness import NOW, PIN, OwnerHost

from qrpos import manager_pin
from qrpos.config import Config
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.present.i18n import set_language
from qrpos.service import TerminalClient
from qrpos.simulator import TerminalCredentials
from qrpos.tui.services import KioskServices


@pytest.fixture(autouse=True)
def _english() -> Any:
    set_language("en")
    yield
    set_language("mn")


@pytest.fixture
async def services(
    tmp_path: Path, asgi_client: TerminalClient, terminal: TerminalCredentials
) -> AsyncIterator[KioskServices]:
    manager_pin.set_pin(tmp_path, PIN)
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    yield KioskServices(
        config=Config(base_url="http://127.0.0.1", username=terminal.username, state_dir=tmp_path),
        desk=desk,
        client=asgi_client,
        clock=lambda: NOW,
    )
    ledger.close()


@pytest.fixture
def host(services: KioskServices) -> Callable[..., OwnerHost]:
    def make(**menu: Any) -> OwnerHost:
        return OwnerHost(services, **menu)

    return make
