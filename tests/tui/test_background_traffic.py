"""The kiosk's own background requests stay few and never hold up a sale: the
reachability probe is skipped while the service answered lately, and a VAT poll that
falls due while a card is being presented waits until the sale is over. Requests are
counted at the client's transport (a seam we own)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kiosk_harness import Kiosk
from test_receipts_followed import LIST_PATH, CountingTransport, counted_kiosk

from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.tui.messages import TokenScanned

HEALTH_EVERY_S = 0.05
EVERY_S = 0.1


@pytest.fixture
async def kiosk(
    tmp_path: Path, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials
) -> AsyncIterator[tuple[Kiosk, CountingTransport]]:
    options = {"health_every_s": HEALTH_EVERY_S, "receipts_every_s": EVERY_S}
    async with counted_kiosk(tmp_path, sim_app, sandbox, terminal, **options) as kiosk:
        yield kiosk


def probes(transport: CountingTransport) -> int:
    return transport.requests.count(("GET", spec.HEALTH_PATH))


async def test_a_kiosk_that_heard_the_service_lately_sends_no_probe(
    kiosk: tuple[Kiosk, CountingTransport],
) -> None:
    app, transport = kiosk[0].app, kiosk[1]
    await kiosk[0].on_screen("AmountScreen")
    await kiosk[0].until(lambda: probes(transport) >= 1)  # nothing heard yet: one probe
    await kiosk[0].pilot.pause(HEALTH_EVERY_S * 12)
    assert probes(transport) == 1  # the probe's answer is proof for ten minutes
    assert app.status.online is True


async def test_a_poll_due_during_a_sale_waits_until_the_sale_is_over(
    kiosk: tuple[Kiosk, CountingTransport], wallet: WalletInfo
) -> None:
    k, transport = kiosk
    follower = k.app.receipts
    # the fallback retry is out of reach: only the sale's end may bring the poll back
    follower.busy_retry_s = 3600.0
    await k.key_amount("2000")
    await k.on_screen("PresentCardScreen")
    k.app.post_message(TokenScanned(wallet.qr_token))
    await k.on_screen("ResultScreen")
    await k.until(lambda: transport.lists() >= 1, timeout=30)  # the receipt is followed
    await k.pilot.press("x")  # any key: the next sale
    await k.key_amount("3000")
    await k.on_screen("PresentCardScreen")
    presenting, polls = len(transport.requests), follower.polls
    # a poll falls due while the card is awaited (as the policy's next one would)
    follower.schedule(0.0)
    await k.pilot.pause(0.5)
    assert follower.polls == polls
    assert ("GET", LIST_PATH) not in transport.requests[presenting:]
    token = k.sandbox.wallet(wallet.wallet_id).qr_token
    k.app.post_message(TokenScanned(token))
    await k.on_screen("ResultScreen")
    charge_at = transport.requests.index(("POST", spec.CHARGE_PATH), presenting)
    assert ("GET", LIST_PATH) not in transport.requests[presenting:charge_at]
    # the sale is over: the poll it held back is planned again by the policy, at once
    await k.until(lambda: ("GET", LIST_PATH) in transport.requests[charge_at:], timeout=30)


async def test_receipts_are_followed_on_the_services_measured_clock(
    kiosk: tuple[Kiosk, CountingTransport],
) -> None:
    """The follow-up's windows and schedule use the service's clock as the desk measured
    it, not the Pi's (tests/reports/test_follow_clock_skew.py shows why)."""
    k, _ = kiosk
    vat = k.app.receipts.vat
    assert vat is not None and k.services.desk is not None
    assert vat.clock == k.services.desk.listing.service_now
