"""Review 3 of issue 47: a window pairing on a row the owner refunds by hand still moves
the sale's money.

`lookup._judged` sends a proof that only the window pairs with the sale to a person
(`timing.match_rule` "person": `unconfirmed_row`) only when the look-up's event is
`lookup_proven`. A proof on a row a refund made by hand holds (`refund_queue.held_by_hand`)
is renamed `lookup_proven_refunded_row` first, so it skips that rule: an abandoned sale
takes the owner's refund of a stranger's row as its own (`charged` 1, counted held by X
and Z), and when that refund is refused its `refund_refused` review refuses the truth,
"not charged" (the sale is "proven charged" on a row that was never its own).

Story (sandbox over real HTTP): every send of sale B fails before anything commits (never
charged); the cashier abandons B; another install on the same credentials charges another
wallet B's amount within B's window (row X); the owner refunds X by hand (the stranger's
customer asked) and the refund stalls on 5xx. Then the kiosk watches B.
"""

from __future__ import annotations

import asyncio

import pytest
from ledger_stories import stranger_row

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, refunds_sql, sales_sql
from qrpos.ledger.reviews import MarkNotCharged, RefundRow
from qrpos.ledger.states import IntentRow
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

AMOUNT = 6000


def _policy() -> RetryPolicy:
    return RetryPolicy.testing(max_sends=3, settle_s=0.3, lookup_interval_s=0.02, sleep=True)


async def _abandoned_with_a_stranger_refunding(
    desk: ChargeDesk, live_url: str, terminal: TerminalCredentials, sandbox: Sandbox, qr: str
) -> tuple[int, str]:
    sandbox.arm_fault("error_before_commit", count=10**6, operation="charge")
    result = await desk.charge(AMOUNT, qr, deadline_s=1.5)
    assert result.is_open, result
    assert (await desk.abandon(result.intent_id)).state is IntentState.ABANDONED
    sandbox.clear_faults()
    tx_id = await stranger_row(live_url, terminal, sandbox, AMOUNT)
    # the owner refunds X by hand; the service answers 500 (the refund stays queued)
    sandbox.arm_fault("error_before_commit", count=10**6, operation="reverse")
    by_hand = await desk.reverse(tx_id, deadline_s=0.5)
    assert by_hand.state == "unresolved", by_hand
    return result.intent_id, tx_id


async def _watch(desk: ChargeDesk, intent_id: int) -> None:
    for _ in range(40):  # the watch of an abandoned sale: one look each pass
        after = await desk.resolve(intent_id, deadline_s=10)
        # (a watched abandon is not "open": it stays abandoned until a look concludes, and
        # late commits are waited for from the abandon when its request was left in flight)
        if after.state is not IntentState.ABANDONED:
            return
        await asyncio.sleep(0.05)  # late commits settle (`settle_s`)


def _sale(ledger: Ledger, intent_id: int) -> IntentRow:
    row = ledger.read(lambda c: sales_sql.get_intent(c, intent_id))
    assert row is not None
    return row


async def test_an_abandoned_sale_never_takes_a_strangers_row_refunded_by_hand(
    ledger: Ledger,
    http_client: TerminalClient,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, http_client, policy=_policy())
    sale_id, tx_id = await _abandoned_with_a_stranger_refunding(
        desk, live_url, terminal, sandbox, wallet.qr_token
    )
    await _watch(desk, sale_id)
    sale = _sale(ledger, sale_id)
    assert not [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    refunds = ledger.read(lambda c: refunds_sql.list_reversals(c, include_final=True))
    # B was never charged: X is not its row, nor the owner's refund its refund
    assert [r.intent_id for r in refunds if r.tx_id == tx_id] == [None], (sale, refunds)
    assert sale.charged != 1, sale
    assert sale.state is IntentState.NEEDS_REVIEW, sale
    [review] = desk.listing.reviews()
    assert review.reason == "unconfirmed_row"
    assert tx_id in [c.transaction.id for c in review.candidates]


async def test_a_refused_refund_by_hand_leaves_a_review_that_can_say_not_charged(
    ledger: Ledger,
    http_client: TerminalClient,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, http_client, policy=_policy())
    sale_id, tx_id = await _abandoned_with_a_stranger_refunding(
        desk, live_url, terminal, sandbox, wallet.qr_token
    )
    await _watch(desk, sale_id)
    # the owner's refund is then refused (403): whatever review B is in, a person must be
    # able to settle it to the truth, "not charged"
    sandbox.clear_faults()
    sandbox.arm_fault("forbidden", count=10**6, operation="reverse")
    await desk.recover(deadline_s=5, patient=True)
    sale = _sale(ledger, sale_id)
    assert sale.state is IntentState.NEEDS_REVIEW, sale
    settled = await desk.settle_review(sale_id, MarkNotCharged(), actor="owner")
    assert settled.state is IntentState.NOT_CHARGED, settled
    assert _sale(ledger, sale_id).charged == 0
    assert [tx.status for tx in sandbox.transactions() if tx.id == tx_id] == [
        spec.TxStatus.COMPLETED
    ]


async def _abandoned_own_charge(desk: ChargeDesk, sandbox: Sandbox) -> tuple[int, str, str]:
    """Sale B committed X, its replies all lost and the history unreadable, abandoned:
    (B's id, X, B's wallet). Faults are cleared."""
    warm = await desk.charge(100, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    assert warm.charged
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=10**6, operation="charge")
    sandbox.arm_fault("error_before_commit", count=10**6, operation="list")
    sale = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=1)
    assert sale.state is IntentState.UNRESOLVED, sale
    assert (await desk.abandon(sale.intent_id)).state is IntentState.ABANDONED
    [charge] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    sandbox.clear_faults()
    return sale.intent_id, charge.id, wallet.wallet_id


@pytest.mark.parametrize("landed", [False, True], ids=["pending", "landed"])
async def test_a_person_takes_the_refund_by_hand_as_the_abandoned_sales(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, landed: bool
) -> None:
    """The stories of test_abandon_proven_on_a_refunded_row.py (its own row X, refunded by
    hand, pending or landed) through the person's refund: the window pairs X with B, so B
    goes to a person with X offered; refunding X takes the owner's refund as B's (no second
    reversal), and B ends refunded once."""
    desk = ChargeDesk(ledger, asgi_client, policy=_policy())
    sale_id, tx_id, wallet_id = await _abandoned_own_charge(desk, sandbox)
    if not landed:
        sandbox.arm_fault("error_before_commit", count=10**6, operation="reverse")
    by_hand = await desk.reverse(tx_id, deadline_s=0.5)
    assert by_hand.state == ("refunded" if landed else "unresolved"), by_hand
    await _watch(desk, sale_id)
    assert _sale(ledger, sale_id).state is IntentState.NEEDS_REVIEW
    [review] = desk.listing.reviews()
    assert review.reason == "unconfirmed_row"
    assert [c.transaction.id for c in review.candidates] == [tx_id]
    sandbox.clear_faults()
    await desk.settle_review(sale_id, RefundRow(tx_id), actor="owner", deadline_s=5)
    await desk.recover(deadline_s=5, patient=True)
    refunds = ledger.read(lambda c: refunds_sql.list_reversals(c, include_final=True))
    assert [(r.intent_id, str(r.state)) for r in refunds if r.tx_id == tx_id] == [
        (sale_id, "refunded")
    ]
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000  # refunded, once
    sale = _sale(ledger, sale_id)
    assert sale.state is IntentState.REFUNDED_PER_REVIEW, sale
