"""The VAT follow-up on a Pi whose clock is off: a receipt issued by the service is seen
on the first poll, and that poll is planned as soon after the charge as the policy says,
whichever way and however far (within what a Pi without RTC meets) the clocks disagree.

Before: the window ended at the kiosk's "now", so a kiosk behind the service by more
than the window's margin asked for a window ending before its own charges (or one that
runs backwards: a 400), and the first check was planned on the kiosk's clock against the
service's stamps, minutes late.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from qrpos import spec
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.reports.history_cache import HistoryCache
from qrpos.reports.vat_watch import BatchedFollowPolicy, VatFollowUp
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, WalletInfo

POLICY = BatchedFollowPolicy()
#: how far the service's clock runs ahead of the kiosk's (behind when negative), seconds
OFFSETS_S = [-3 * 3600.0, -600.0, -30.0, -4.0, 0.0, 4.0, 30.0, 600.0, 3 * 3600.0]


@pytest.mark.parametrize("offset_s", OFFSETS_S)
async def test_a_receipt_is_followed_on_the_services_clock(
    offset_s: float,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    wallet: WalletInfo,
    tmp_path: Path,
) -> None:
    sandbox.set_clock_offset(offset_s)
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    cache = HistoryCache(tmp_path / "history.sqlite3")
    try:
        result = await desk.charge(700, wallet.qr_token, deadline_s=5.0)
        assert result.transaction is not None
        tx = result.transaction
        assert tx.vat_status is spec.VatStatus.PENDING
        vat = VatFollowUp(asgi_client, cache, desk.listing.service_now, jitter=lambda: 0.0)
        cache.store([tx])
        # planned from the charge's own stamp on the service's clock: the first check
        delay = vat.next_delay_s()
        assert delay is not None
        assert POLICY.first_check_s - 5 <= delay <= POLICY.first_check_s + 1
        sandbox.settle_vat()
        polled = await vat.poll_once()
        assert polled.error is None
        assert [t.id for t in polled.changed] == [tx.id]
        seen = cache.get(tx.id)
        assert seen is not None and seen.vat_status is spec.VatStatus.ISSUED
        assert not vat.needs_polling()
        # the measured clock is the service's, within the Date header's second
        gap = desk.listing.service_now() - datetime.fromtimestamp(sandbox.now_us() / 1e6, UTC)
        assert abs(gap) < timedelta(seconds=2)
    finally:
        cache.close()
        ledger.close()
