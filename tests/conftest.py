"""Fixtures every team shares: a fresh sandbox per test, in-process and over loopback.

- `sandbox`: a fresh `Sandbox` (gateway ceiling off, so loops of requests are not
  throttled by chance; turn it on with ``sandbox.configure(rate_limit_enabled=True)``).
- `sim_app`: the ASGI app serving `sandbox`.
- `terminal`: `TerminalCredentials` of a terminal of merchant ``m_demo``.
- `wallet`: `WalletInfo` of a wallet funded with 1,000,000 MNT.
- `asgi_client`: a `TerminalClient` for `terminal`, in-process (`asgi_transport`).
- `live_url`: base URL of one uvicorn server per session, serving *this test's* sandbox.
- `http_client`: a `TerminalClient` for `terminal` over real loopback HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import settings

from qrpos.service import TerminalClient
from qrpos.simulator import (
    Sandbox,
    SimulatorOptions,
    TerminalCredentials,
    WalletInfo,
    create_app,
    serve_in_thread,
)
from qrpos.simulator.testing import asgi_transport

# No per-example deadline: Hypothesis's default (200 ms an example) is a timed assertion,
# which this project leaves to benchmarks/; with the suite on every core (pytest-xdist) or on
# a busy CI machine an example waits for a core and fails the deadline for no fault of the
# code (seen: 329 ms for a quick-prices example). Examples, strategies and health checks are
# unchanged.
settings.register_profile("qrpos", deadline=None)
settings.load_profile("qrpos")

#: the base URL clients use in-process (plain http is allowed to loopback only)
ASGI_BASE_URL = "http://127.0.0.1"


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    sb = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    yield sb
    sb.close()


@pytest.fixture
def sim_app(sandbox: Sandbox) -> Any:
    return create_app(sandbox)


@pytest.fixture
def terminal(sandbox: Sandbox) -> TerminalCredentials:
    return sandbox.create_terminal("m_demo")


@pytest.fixture
def wallet(sandbox: Sandbox) -> WalletInfo:
    return sandbox.create_wallet(1_000_000)


@pytest.fixture
async def asgi_client(sim_app: Any, terminal: TerminalCredentials) -> AsyncIterator[TerminalClient]:
    client = TerminalClient(
        ASGI_BASE_URL, terminal.username, terminal.password, transport=asgi_transport(sim_app)
    )
    yield client
    await client.aclose()


@pytest.fixture(scope="session")
def _live_server() -> Iterator[tuple[Any, str]]:
    # One server for the session; each test points it at its own fresh sandbox.
    app = create_app(Sandbox(SimulatorOptions(rate_limit_enabled=False)))
    with serve_in_thread(app) as url:
        yield app, url


@pytest.fixture
def live_url(_live_server: tuple[Any, str], sandbox: Sandbox) -> Iterator[str]:
    app, url = _live_server
    app.state.sandbox = sandbox
    yield url
    app.state.sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))


@pytest.fixture
async def http_client(
    live_url: str, terminal: TerminalCredentials
) -> AsyncIterator[TerminalClient]:
    client = TerminalClient(live_url, terminal.username, terminal.password, timeout_s=5.0)
    yield client
    await client.aclose()


@pytest.fixture(autouse=True)
def _language_restored() -> Iterator[None]:
    """A test (or an in-process command) that switches the words' language does not
    leave it switched for the next test."""
    from qrpos.present.i18n import current_language, set_language

    before = current_language()
    yield
    set_language(before)


@pytest.fixture
def english() -> None:
    """Words in English for a test that reads them (the kiosk's default is Mongolian)."""
    from qrpos.present.i18n import set_language

    set_language("en")


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A command run in-process (`qrpos.cli.main`) sets the root logger's level and
    handler as the real process would; put them back so that no later test inherits them."""
    root = logging.getLogger()
    level, handlers = root.level, root.handlers[:]
    yield
    root.setLevel(level)
    root.handlers[:] = handlers
