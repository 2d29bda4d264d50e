"""The owner menu counts every VAT receipt it follows, in words that agree with the
number: a sale's pending receipt counts, not only a refund waiting to be voided."""

from __future__ import annotations

from collections.abc import Callable

from owner_harness import OwnerHost
from textual.widgets import Static

from pilot_wait import until
from qrpos.simulator import Sandbox
from qrpos.tui.screens.owner.menu import OwnerMenuScreen
from qrpos.tui.services import KioskServices, utc_now


async def test_the_menu_counts_a_sales_pending_receipt_in_the_singular(
    host: Callable[..., OwnerHost], services: KioskServices, sandbox: Sandbox
) -> None:
    services.clock = utc_now  # a sale of now, followed as the kiosk follows it
    assert services.desk is not None
    wallet = sandbox.create_wallet(100_000)
    result = await services.desk.charge(4_500, wallet.qr_token, deadline_s=5)
    assert result.transaction is not None
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        menu = pilot.app.screen
        assert isinstance(menu, OwnerMenuScreen)
        menu.follower.charged(result.transaction)  # what the kiosk does on an approval
        menu.follower.schedule(0.05)
        line = menu.query_one("#vat-status", Static)
        await until(pilot, lambda: "Following" in str(line.render()), "the menu's follow-up")
        assert str(line.render()) == "Following 1 VAT receipt"
