"""The owner's menu, read from the messages that reach it: opening it asks the VAT
follow-up for a poll (one `VatFollowUpPolled`), and the menu says what it found."""

from __future__ import annotations

from collections.abc import Callable

from owner_harness import OwnerHost
from textual.message import Message
from textual.widgets import Static

from qrpos.reports.history_cache import HistoryCache
from qrpos.simulator import Sandbox, WalletInfo
from qrpos.tui.screens.owner.messages import VatFollowUpPolled
from qrpos.tui.services import KioskServices, utc_now


async def test_opening_the_menu_polls_once_and_says_what_is_followed(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    wallet: WalletInfo,
) -> None:
    services.clock = utc_now  # the sale happens now: its receipt is pending
    assert services.desk is not None
    token = sandbox.wallet(wallet.wallet_id).qr_token
    tx = (await services.desk.charge(3_000, token, deadline_s=5)).transaction
    assert tx is not None
    # as the kiosk does after an approved sale: its pending receipt is in the cache
    cache = HistoryCache.in_state_dir(services.config.state_dir)
    cache.store([tx])
    cache.close()
    posted: list[Message] = []
    async with host(first_poll_s=0.01).run_test(size=(80, 24), message_hook=posted.append) as pilot:
        for _ in range(200):
            if any(isinstance(m, VatFollowUpPolled) for m in posted):
                break
            await pilot.pause(0.02)
        await pilot.pause()
        said = str(pilot.app.screen.query_one("#vat-status", Static).render())
    # one poll, told to every screen on the stack (the host's default screen and the menu)
    polls = {(m.next_delay_s, m.rate_limited) for m in posted if isinstance(m, VatFollowUpPolled)}
    [(next_delay_s, rate_limited)] = polls
    assert not rate_limited
    assert next_delay_s is not None  # the receipt is still pending: polled again later
    assert said.startswith("Following"), said


def test_a_history_that_cannot_be_read_is_said_in_the_owners_words() -> None:
    """End of day names why the history could not be read, never an exception class."""
    from qrpos.present.owner import listing_failure
    from qrpos.service.outcomes import CredentialsRejected, RateLimited, Refused, Unresolved

    said = {
        listing_failure(Unresolved(reason="timeout")),
        listing_failure(RateLimited(retry_after_s=12.0)),
        listing_failure(RateLimited()),
        listing_failure(CredentialsRejected()),
        listing_failure(Refused(message="\x1b[31mno")),
    }
    for text in said:
        assert not any(name in text for name in ("Unresolved", "RateLimited", "Credentials"))
        assert "\x1b" not in text
    assert "cannot be reached" in listing_failure(Unresolved(reason="timeout"))
    assert "12 s" in listing_failure(RateLimited(retry_after_s=12.0))
