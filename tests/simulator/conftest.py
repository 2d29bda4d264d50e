"""Conformance helpers: raw HTTP to the sandbox, over loopback TCP and in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.simulator.testing import asgi_transport

ASGI_BASE_URL = "http://127.0.0.1"


class FakeClock:
    """A settable UTC clock for the sandbox (VAT delays, windows, key retention)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2025, 3, 1, 4, 0, 0, 123456, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(sandbox: Sandbox) -> FakeClock:
    fake = FakeClock()
    sandbox.clock = fake
    return fake


@pytest.fixture(params=["loopback", "asgi"])
async def raw(request: pytest.FixtureRequest, sim_app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client to the sandbox of this test, once over TCP and once in-process."""
    if request.param == "loopback":
        url = request.getfixturevalue("live_url")
        client = httpx.AsyncClient(base_url=url, timeout=5.0)
    else:
        client = httpx.AsyncClient(
            base_url=ASGI_BASE_URL, transport=asgi_transport(sim_app), timeout=5.0
        )
    async with client:
        yield client


def auth(creds: TerminalCredentials) -> tuple[str, str]:
    return (creds.username, creds.password)


Charge = Callable[..., Any]


@pytest.fixture
def charge(raw: httpx.AsyncClient, terminal: TerminalCredentials) -> Charge:
    """POST a charge as `terminal`: ``await charge(token, amount, key=None, creds=None)``."""

    async def post(
        token: str,
        amount: int,
        key: str | None = None,
        creds: TerminalCredentials | None = None,
    ) -> httpx.Response:
        headers = {spec.IDEMPOTENCY_HEADER: key} if key is not None else {}
        return await raw.post(
            spec.CHARGE_PATH,
            json={spec.FIELD_QR_TOKEN: token, spec.FIELD_AMOUNT: amount},
            headers=headers,
            auth=auth(creds or terminal),
        )

    return post


def assert_text_error(response: httpx.Response, status: int, text: str) -> None:
    """The spec's plain-text error: status, content type, one line and a newline."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == spec.TEXT_CONTENT_TYPE
    assert response.content == (text + "\n").encode()


def fresh_token(sandbox: Sandbox, wallet: WalletInfo) -> str:
    return sandbox.wallet(wallet.wallet_id).qr_token
