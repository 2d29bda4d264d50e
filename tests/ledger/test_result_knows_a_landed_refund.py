"""A sale's result (`listing.result_of`, what `ChargeDesk` returns) carries whether a refund
of its row landed, and a failing read of that after the sale committed never turns a paid
sale into an error at the till (a fresh review of this stop's change)."""

from __future__ import annotations

from qrpos.ledger import ChargeDesk, IntentState, Ledger, Money, RetryPolicy
from qrpos.ledger.listing import result_of
from qrpos.ledger.sales_sql import get_intent
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox


async def test_a_result_knows_the_refund_of_its_row_and_survives_a_closed_outbox(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(), jitter=lambda: 1.0)
    sold = await desk.charge(4500, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    assert (sold.state, sold.money, sold.sold) == (IntentState.APPROVED, Money.CHARGED, True)
    assert sold.transaction is not None
    assert (await desk.reverse(sold.transaction.id, deadline_s=5)).state == "refunded"
    again = await desk.resolve(sold.intent_id, deadline_s=5)
    assert (again.state, again.refunded, again.money, again.sold) == (
        IntentState.APPROVED,
        True,
        Money.REFUNDED,
        False,
    )
    row = ledger.read(lambda c: get_intent(c, sold.intent_id))
    assert row is not None
    ledger.close()
    shut = await result_of(ledger, row)  # the outbox closed under it: no error
    assert (shut.state, shut.transaction) == (IntentState.APPROVED, sold.transaction)
