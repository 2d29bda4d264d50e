"""VAT receipts are followed all day by the kiosk, not only while the owner menu is
open: polling starts after an approved sale (receipt pending), stops once the receipt is
issued, makes no request while nothing is pending, and backs off on 429. Requests are
counted at the client's transport (a seam we own)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kiosk_harness import FAST, Kiosk

from qrpos.config import Config
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.simulator.testing import asgi_transport
from qrpos.tui.app import KioskApp
from qrpos.tui.messages import TokenScanned
from qrpos.tui.receipts import ReceiptFollower
from qrpos.tui.services import KioskServices, utc_now

EVERY_S = 0.1
LIST_PATH = "/v1/transactions"


class CountingTransport(httpx.AsyncBaseTransport):
    """Passes every request on to the sandbox and notes (method, path)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.requests: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def lists(self) -> int:
        return self.requests.count(("GET", LIST_PATH))


@contextlib.asynccontextmanager
async def counted_kiosk(
    tmp_path: Path, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials, **options: Any
) -> AsyncIterator[tuple[Kiosk, CountingTransport]]:
    """The real app on the sandbox, every request counted at the client's transport."""
    transport = CountingTransport(asgi_transport(sim_app))
    client = TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    )
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    services = KioskServices(
        config=Config(
            base_url="http://127.0.0.1",
            username=terminal.username,
            state_dir=tmp_path,
            language="en",
        ),
        desk=ChargeDesk(ledger, client, policy=RetryPolicy.testing()),
        client=client,
        clock=utc_now,  # sales happen now: the follow-up's "last day" must contain them
    )
    app = KioskApp(services, **{**FAST, **options})
    async with app.run_test(size=(80, 24)) as pilot:
        yield Kiosk(app, pilot, services, sandbox, terminal, ledger), transport
    await client.aclose()
    ledger.close()


@pytest.fixture
async def counted(
    tmp_path: Path, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials
) -> AsyncIterator[tuple[Kiosk, CountingTransport]]:
    async with counted_kiosk(
        tmp_path, sim_app, sandbox, terminal, receipts_every_s=EVERY_S
    ) as kiosk:
        yield kiosk


def last_delay(follower: ReceiptFollower) -> float | None:
    """The last poll's plan for the next one (read anew: each poll replaces it)."""
    assert follower.last_poll is not None
    delay: float | None = follower.last_poll.next_delay_s
    return delay


async def test_an_approved_sale_is_followed_until_its_receipt_is_issued_then_polling_stops(
    counted: tuple[Kiosk, CountingTransport], wallet: WalletInfo
) -> None:
    kiosk, transport = counted
    follower = kiosk.app.receipts
    await kiosk.key_amount("7000")
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(wallet.qr_token))
    await kiosk.on_screen("ResultScreen")
    charge_at = transport.requests.index(("POST", "/v1/transactions/charge-by-token"))
    assert ("GET", LIST_PATH) not in transport.requests[:charge_at]
    # the receipt is pending: the kiosk polls, again and again, with no owner menu open
    await kiosk.until(lambda: transport.lists() >= 2)
    # batched: the next background poll is at least the policy's gap away (compressed);
    # one sale in the window: the till is quiet, so the quiet gap
    assert follower.vat is not None and follower.last_poll is not None
    gap = follower.vat.policy.quiet_gap_s  # type: ignore[attr-defined]
    assert follower.last_poll.next_delay_s is not None
    assert gap * 0.9 <= follower.last_poll.next_delay_s <= gap * 1.3
    kiosk.sandbox.settle_vat()
    await kiosk.until(lambda: not follower.planned)
    assert last_delay(follower) is None
    assert follower.cache is not None
    [row] = follower.cache.page().transactions
    assert row.vat_status == "issued" and row.vat_receipt_id
    settled = transport.lists()
    await kiosk.pilot.pause(EVERY_S * 5)
    assert transport.lists() == settled  # nothing pending: no more polling


async def test_nothing_pending_means_no_history_request_even_with_the_owner_menu(
    counted: tuple[Kiosk, CountingTransport],
) -> None:
    kiosk, transport = counted
    await kiosk.on_screen("AmountScreen")
    await kiosk.pilot.press("o")
    await kiosk.on_screen("OwnerMenuScreen")
    await kiosk.pilot.pause(0.8)  # past the menu's first poll (0.5 s) and many intervals
    assert kiosk.app.receipts.polls >= 1  # the menu asked for a poll…
    assert transport.lists() == 0  # …and nothing pending meant no request


async def test_a_429_backs_off_beyond_the_interval_then_polling_resumes(
    counted: tuple[Kiosk, CountingTransport], wallet: WalletInfo
) -> None:
    kiosk, transport = counted
    follower = kiosk.app.receipts
    kiosk.sandbox.arm_fault("rate_limit", operation="list")
    await kiosk.key_amount("3000")
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(wallet.qr_token))
    await kiosk.on_screen("ResultScreen")
    await kiosk.until(lambda: follower.last_poll is not None)
    busy = follower.last_poll
    assert busy is not None and busy.rate_limited
    assert busy.next_delay_s is not None and busy.next_delay_s >= 1.5 * EVERY_S
    assert transport.lists() == 1  # the 429'd request, not retried at once
    kiosk.sandbox.settle_vat()
    await kiosk.until(lambda: not follower.planned)
    assert follower.last_poll is not None and not follower.last_poll.rate_limited
