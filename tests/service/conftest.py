"""The client under test, once over loopback TCP and once in-process."""

from __future__ import annotations

import pytest

from qrpos.service import TerminalClient


@pytest.fixture(params=["loopback", "asgi"])
def client(request: pytest.FixtureRequest) -> TerminalClient:
    name = "http_client" if request.param == "loopback" else "asgi_client"
    fixture: TerminalClient = request.getfixturevalue(name)
    return fixture
