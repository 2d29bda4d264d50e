"""Every path of a sale, driven by keys on the real app against the real sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kiosk_harness import Kiosk
from textual.widgets import DataTable

from qrpos.ledger import IntentState
from qrpos.service import Approved
from qrpos.simulator import WalletInfo
from qrpos.tui.messages import ScanRefusedMessage, TokenScanned
from qrpos.tui.sale import SaleState

#: the manager PIN of the story in which the owner refunds an abandoned sale's row
OWNER_PIN = "2468"


async def _sale(kiosk: Kiosk, amount: str, token: str) -> None:
    await kiosk.key_amount(amount)
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(token))


async def test_approved_sale_debits_once_and_shows_amount_time_and_tx(
    kiosk: Kiosk, wallet: WalletInfo
) -> None:
    await _sale(kiosk, "12500", wallet.qr_token)
    await kiosk.on_screen("ResultScreen")
    screen = kiosk.app.screen
    assert screen.view.kind == "approved"  # type: ignore[attr-defined]
    detail = kiosk.text("#detail")
    [tx] = kiosk.sandbox.transactions()
    assert tx.id in detail
    assert kiosk.sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 12_500
    await kiosk.pilot.press("x")
    await kiosk.on_screen("AmountScreen")


async def test_amount_out_of_range_is_refused_with_a_hint_before_anything_is_sent(
    kiosk: Kiosk,
) -> None:
    await kiosk.key_amount("1000001")
    assert "at most 1,000,000" in kiosk.text("#notice")
    await kiosk.pilot.press("slash", "0", "enter")
    assert "Key in an amount" in kiosk.text("#notice")
    assert type(kiosk.app.screen).__name__ == "AmountScreen"
    assert kiosk.sandbox.transactions() == []


async def test_keypad_keys_type_00_and_000_and_delete(kiosk: Kiosk) -> None:
    await kiosk.on_screen("AmountScreen")
    await kiosk.pilot.press("1", "2", "asterisk", "full_stop", "9", "minus")
    assert kiosk.app.screen.amount == 1_200_000  # type: ignore[attr-defined]


async def test_insufficient_funds_is_declined_with_a_human_reason(kiosk: Kiosk) -> None:
    poor = kiosk.sandbox.create_wallet(100)
    await _sale(kiosk, "500", poor.qr_token)
    await kiosk.on_screen("ResultScreen")
    assert kiosk.app.screen.view.kind == "declined"  # type: ignore[attr-defined]
    assert "Not enough money" in kiosk.text("#detail")


async def test_suspended_wallet_is_declined_with_a_human_reason(kiosk: Kiosk) -> None:
    suspended = kiosk.sandbox.create_wallet(10_000)
    kiosk.sandbox.suspend_wallet(suspended.wallet_id)
    await _sale(kiosk, "500", suspended.qr_token)
    await kiosk.on_screen("ResultScreen")
    assert "suspended" in kiosk.text("#detail")


async def test_unknown_token_is_declined_as_invalid(kiosk: Kiosk) -> None:
    await _sale(kiosk, "500", "vqr_doesnotexist000000000000")
    await kiosk.on_screen("ResultScreen")
    assert "not valid" in kiosk.text("#detail")


async def test_spent_token_asks_the_customer_to_refresh_the_pass(
    kiosk: Kiosk, wallet: WalletInfo
) -> None:
    # the code was spent at another till (this kiosk's own spent codes never leave it:
    # tests/tui/test_code_already_paid.py); the service answers 409
    assert kiosk.services.client is not None
    elsewhere = await kiosk.services.client.charge(wallet.qr_token, 100, "another-till")
    assert isinstance(elsewhere, Approved)
    await _sale(kiosk, "200", wallet.qr_token)
    await kiosk.until(lambda: kiosk.app.sale.state is SaleState.RESULT)
    await kiosk.on_screen("ResultScreen")
    assert "refresh the pass" in kiosk.text("#detail")
    assert len(kiosk.sandbox.transactions()) == 1


async def test_lost_response_is_recovered_and_charged_exactly_once(
    kiosk: Kiosk, wallet: WalletInfo
) -> None:
    kiosk.sandbox.arm_fault("drop_after_commit", operation="charge")
    await _sale(kiosk, "7000", wallet.qr_token)
    await kiosk.on_screen("ResultScreen")
    assert kiosk.app.screen.view.kind == "approved"  # type: ignore[attr-defined]
    assert len(kiosk.sandbox.transactions()) == 1
    assert kiosk.sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 7_000


async def test_unclear_sale_blocks_until_abandoned_then_the_owner_refunds_its_row(
    kiosk: Kiosk, wallet: WalletInfo, tmp_path: Path
) -> None:
    """Issue 47: the charge committed, every reply lost, the history unreadable; the
    cashier abandons. When the history answers, the row of its amount in its window is
    tied to the sale by the window alone (another install's would look the same), so the
    kiosk refunds nothing by itself: the owner's "payments to check" offer the row
    (`unconfirmed_row`), and the owner refunds it there with the PIN."""
    from qrpos import manager_pin
    from qrpos.present.i18n import t
    from qrpos.present.owner import review_reason

    manager_pin.set_pin(tmp_path, OWNER_PIN)
    # every charge reply is lost (for as long as the cashier waits) and the history
    # cannot be read: the sale stays unclear
    kiosk.sandbox.arm_fault("drop_after_commit", count=1_000_000, operation="charge")
    kiosk.sandbox.arm_fault("error_before_commit", count=1_000_000, operation="list")
    await _sale(kiosk, "9000", wallet.qr_token)
    await kiosk.on_screen("ChargingScreen")
    await kiosk.until(lambda: "Checking the payment" in kiosk.text("#checking"))
    await kiosk.until(lambda: "abandon" in kiosk.text("#hint"))
    await kiosk.pilot.press("escape")
    await kiosk.on_screen("AbandonDialog")
    await kiosk.pilot.press("enter")
    await kiosk.on_screen("ResultScreen")
    assert kiosk.text("#detail") == t("result.abandoned")
    assert "the owner checks it" in kiosk.text("#detail")
    [charge] = kiosk.sandbox.transactions()
    assert kiosk.sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 9_000
    await kiosk.pilot.press("x")
    await kiosk.on_screen("AmountScreen")
    # the history is readable again: the background settler finds the row, and a person
    # is asked; nothing is sent (the faults are gone: a send would replay, a refund land)
    kiosk.sandbox.clear_faults()
    desk = kiosk.services.desk
    assert desk is not None
    kiosk.app.settle_in_background()
    await kiosk.until(lambda: desk.listing.reviews() != [], timeout=10)
    [review] = desk.listing.reviews()
    offered = [c.transaction.id for c in review.candidates]
    assert (review.reason, offered) == ("unconfirmed_row", [charge.id])
    assert kiosk.sandbox.transaction(charge.id).status == "COMPLETED"
    assert kiosk.sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 9_000
    assert [v.kind for v in desk.listing.intents(True)] == ["charge"]  # no refund queued
    # the owner, who saw the customer pay and leave, refunds it on the owner's screen
    await kiosk.pilot.press("f2")
    await kiosk.on_screen("OwnerMenuScreen")
    await kiosk.pilot.press("4")
    await kiosk.on_screen("ReviewsScreen")
    screen: Any = kiosk.app.screen
    sale = int(review.intent.id)
    await kiosk.until(lambda: sale in screen.reviews)
    reviews: DataTable[str] = screen.query_one("#reviews", DataTable)
    assert str(reviews.get_row(str(sale))[3]) == review_reason("unconfirmed_row")
    rows: DataTable[str] = screen.query_one("#candidates", DataTable)
    assert rows.row_count == 1 and str(rows.get_row(charge.id)[2]) == charge.id
    await kiosk.pilot.press("r", *OWNER_PIN, "enter")
    await kiosk.until(lambda: screen.outcome == t("review.done_refund", sale=sale))
    await kiosk.until(lambda: sale not in screen.reviews)
    assert kiosk.sandbox.transaction(charge.id).status == "REVERSED"
    assert kiosk.sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000
    [mine] = [v for v in desk.listing.intents(True) if v.kind == "charge"]
    assert (mine.state, mine.transaction_id) == (IntentState.REFUNDED_PER_REVIEW, charge.id)


async def test_scanned_refusal_with_markup_and_escapes_is_shown_inertly(kiosk: Kiosk) -> None:
    await kiosk.key_amount("100")
    await kiosk.on_screen("PresentCardScreen")
    hostile = "[bold red]PAID[/] \x1b[2J\x1b]0;owned\x07 [link=http://x]y[/link]"
    kiosk.app.post_message(ScanRefusedMessage(f"not a wallet pass: {hostile}"))
    await kiosk.until(lambda: "PAID" in kiosk.text("#scan-status"))
    shown = kiosk.text("#scan-status")
    assert "[bold red]PAID[/]" in shown
    assert "[link=http://x]y[/link]" in shown
    assert "\x1b" not in shown and "\\x1b" in shown
    assert "\x07" not in shown


async def test_a_lost_reply_is_checking_the_payment_at_once_counted_and_timed(
    kiosk: Kiosk, wallet: WalletInfo
) -> None:
    """From the first step after a lost reply the charging screen says "checking the
    payment" with the seconds since the charge began (never "the service is busy"), and
    the status bar counts the sale as unsettled, well before the charge's deadline."""
    kiosk.sandbox.arm_fault("drop_after_commit", count=50, operation="charge")
    kiosk.sandbox.arm_fault("error_before_commit", count=10_000, operation="list")
    await _sale(kiosk, "9000", wallet.qr_token)
    await kiosk.on_screen("ChargingScreen")
    await kiosk.until(lambda: "Checking the payment" in kiosk.text("#checking"), timeout=1.5)
    assert "busy" not in kiosk.text("#phase")
    assert kiosk.app.status.unresolved >= 1
    assert any(ch.isdigit() for ch in kiosk.text("#checking"))
