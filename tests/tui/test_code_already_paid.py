"""A code that already paid for a sale of this kiosk, shown again for a new sale (the
kiosk restarted, so the scan loop's memory of spent codes is gone): the new sale is not
sent, not approved on the old sale's word, and the amount screen says which sale the code
paid, in the screen's language."""

from __future__ import annotations

import time
from typing import Any

from kiosk_harness import Kiosk

from qrpos.ledger import IntentState, sales_sql
from qrpos.simulator import WalletInfo
from qrpos.tui.messages import TokenScanned
from qrpos.tui.sale import SaleState


async def test_a_code_that_paid_an_earlier_sale_is_not_sent_or_approved_again(
    kiosk: Kiosk, wallet: WalletInfo
) -> None:
    spent = wallet.qr_token
    await kiosk.key_amount("5000")
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(spent))
    await kiosk.on_screen("ResultScreen")
    await kiosk.pilot.press("x")
    await kiosk.key_amount("5000")  # the same amount: the old sale must not answer for it
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(spent))
    await kiosk.until(
        lambda: (
            kiosk.app.sale.state is SaleState.READY
            and type(kiosk.app.screen).__name__ == "AmountScreen"
            and "already paid sale #1" in kiosk.text("#notice")
        )
    )
    assert "5,000" in kiosk.text("#notice")
    assert len(kiosk.sandbox.transactions()) == 1
    rows = kiosk.ledger.read(lambda c: sales_sql.list_intents(c, include_final=True))
    assert len(rows) == 1
    assert kiosk.sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 5_000


async def test_a_code_whose_sale_waits_for_review_is_not_sent_again(
    kiosk: Kiosk, wallet: WalletInfo
) -> None:
    """The earlier sale of this code went to the owner's review (it may have paid): a new
    sale with it is not sent, and the cashier is told why, not "declined"."""

    def held(conn: Any) -> int:
        intent = sales_sql.insert_intent(
            conn, idem_key="qrpos-held", token=wallet.qr_token, amount_mnt=2_000, now=time.time()
        )
        sales_sql.update_intent(conn, intent, state=IntentState.NEEDS_REVIEW, token=None)
        return intent

    intent = kiosk.ledger.write(held)
    await kiosk.key_amount("2000")
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(wallet.qr_token))
    await kiosk.until(
        lambda: (
            kiosk.app.sale.state is SaleState.READY
            and type(kiosk.app.screen).__name__ == "AmountScreen"
            and f"sale #{intent}" in kiosk.text("#notice")
        )
    )
    notice = kiosk.text("#notice")
    assert "owner" in notice and "declin" not in notice.lower()
    assert kiosk.sandbox.transactions() == []
