"""A refund counts as landed only on the contract's proof: 204, or 409 already reversed.

The status map reads any 2xx of a reversal as `Refunded`; the spec's success is 204 alone.
A 200 or a 202 ("accepted", maybe not applied) from a broken gateway made the queue say
"refunded" (and an abandoned sale "reversed_after_abandon") while the charge stayed
COMPLETED: the customer's money never came back. The queue now retries such an answer;
the retry's 204 or 409 settles it.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RefundRow, RetryPolicy, refunds_sql
from qrpos.ledger.money import Money, money_of
from qrpos.ledger.states import ReversalState
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport


class OddReversals(httpx.AsyncBaseTransport):
    """The real sandbox, but the first `count` reversals get `status` and never arrive."""

    def __init__(self, inner: httpx.AsyncBaseTransport, status: int, count: int) -> None:
        self.inner, self.status, self.count = inner, status, count

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/reverse") and self.count:
            self.count -= 1
            return httpx.Response(self.status, headers={"content-type": "application/json"})
        return await self.inner.handle_async_request(request)


@pytest.fixture
def odd(sim_app: Any) -> OddReversals:
    return OddReversals(asgi_transport(sim_app), 202, 1)


@pytest.fixture
async def odd_desk(ledger: Ledger, odd: OddReversals, terminal: TerminalCredentials) -> Any:
    client = TerminalClient("http://127.0.0.1", terminal.username, terminal.password, transport=odd)
    yield ChargeDesk(ledger, client, policy=RetryPolicy.testing())
    await client.aclose()


@pytest.mark.parametrize("status", [200, 201, 202])
async def test_a_2xx_other_than_204_is_not_a_refund_until_the_retry_proves_it(
    odd_desk: ChargeDesk, odd: OddReversals, sandbox: Sandbox, status: int
) -> None:
    odd.status, odd.count = status, 10**6
    sale = await odd_desk.charge(500, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    assert sale.transaction is not None
    tx = sale.transaction.id
    refund = await odd_desk.reverse(tx, deadline_s=0.3)
    # the charge is still COMPLETED: the kiosk must not say "refunded"
    assert sandbox.transaction(tx).status is spec.TxStatus.COMPLETED
    assert refund.state == "unresolved"
    # once the service answers as the contract says, the queue settles it
    odd.count = 0
    assert (await odd_desk.reverse(tx, deadline_s=5)).state == "refunded"
    assert sandbox.transaction(tx).status is spec.TxStatus.REVERSED


async def test_an_abandoned_sale_refunded_from_its_review_is_not_refunded_on_a_202(
    odd_desk: ChargeDesk, odd: OddReversals, ledger: Ledger, sandbox: Sandbox
) -> None:
    """An abandoned sale whose charge committed with every reply lost: the window pairs its
    row, a person refunds it (issue 47: an abandoned sale is never refunded on the window's
    word), and the gateway answers the refund 202. The sale must not read as refunded
    until a 204 (or 409 already reversed) proves it."""
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("drop_after_commit", count=6, operation="charge")
    sandbox.arm_fault("error_before_commit", count=10**6, operation="list")
    sale = await odd_desk.charge(500, wallet.qr_token, deadline_s=0.3)
    await odd_desk.abandon(sale.intent_id)
    sandbox.clear_faults()
    odd.count = 10**6
    [watched] = await odd_desk.recover(deadline_s=0.5)
    [tx] = [t.id for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]
    # the history pairs the row by amount and time alone: a person decides, nothing refunded
    assert watched.state is IntentState.NEEDS_REVIEW and watched.charged is None
    [review] = odd_desk.listing.reviews()
    assert review.reason == "unconfirmed_row"
    assert [c.transaction.id for c in review.candidates] == [tx]
    assert ledger.read(refunds_sql.open_reversals) == []
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 9_500
    # the owner, who saw the customer pay, refunds the row; the gateway answers 202
    decided = await odd_desk.settle_review(sale.intent_id, RefundRow(tx), deadline_s=0.5)
    assert decided.state is IntentState.REFUNDED_PER_REVIEW and decided.charged is True
    assert sandbox.transaction(tx).status is spec.TxStatus.COMPLETED
    [rev] = ledger.read(refunds_sql.open_reversals)
    assert rev.tx_id == tx and rev.state is ReversalState.PENDING
    # the kiosk's books: still the merchant's money, not "refunded"
    assert money_of(decided.state, decided.charged, refunded=False) is Money.CHARGED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 9_500
    odd.count = 0
    [settled] = await odd_desk.recover(deadline_s=5)
    assert settled.state is IntentState.REFUNDED_PER_REVIEW
    assert ledger.read(refunds_sql.open_reversals) == []
    done = ledger.read(lambda c: refunds_sql.reversal_for_tx(c, tx))
    assert done is not None and done.intent_id == sale.intent_id
    assert done.state is ReversalState.REFUNDED
    assert sandbox.transaction(tx).status is spec.TxStatus.REVERSED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000
