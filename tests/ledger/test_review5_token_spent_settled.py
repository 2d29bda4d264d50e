"""Review 5 of issue 47 (e93c872): a 409 "qr token already used" to the sale's key after an
unclear attempt always goes to a person. The review must offer the row that may be the
sale's, the owner must be able to settle it both ways, and the cashier is never told
"declined" (the token was spent: by this sale, or at another till).

Stories nobody covered end to end (the review3 test stops at NEEDS_REVIEW):
- another till on the same credentials spent the token (same price): the review offers
  that till's row, the owner says "not charged" and the sale ends not charged, the other
  till's row untouched (no refund queued);
- the service forgot the sale's key after committing it (`forget_idempotency`): the 409
  is the sale's own earlier commit; the review offers that row and the owner keeps it;
- a till on other credentials spent it: no row in this history, `unverified_conflict`,
  and the owner's "not charged" ends it.
"""

from __future__ import annotations

import uuid

from ledger_stories import token_spent_at_the_other_till, until_closed

from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    MarkCharged,
    MarkNotCharged,
    RetryPolicy,
    review_views,
)
from qrpos.ledger.views import SaleResult
from qrpos.present.outcome import outcome_view
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox, WalletInfo
from qrpos.simulator.testing import asgi_transport

AMOUNT = 6000


def _policy() -> RetryPolicy:
    return RetryPolicy.testing(max_sends=3, settle_s=0.3, lookup_interval_s=0.02, sleep=True)


def _never_declined(*results: SaleResult) -> None:
    for r in results:
        words = f"{r.message} {r.message_said}".lower()
        assert r.state is not IntentState.DECLINED, r
        assert r.decline_code is None, r
        assert "declin" not in words, r
        # the cashier's result screen (`present.outcome`): never the declined screen
        assert outcome_view(r).kind != "declined", (r, outcome_view(r))


async def test_a_token_spent_at_another_till_is_offered_and_settled_not_charged(
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    other_till: TerminalClient,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=_policy())
    held, theirs = await token_spent_at_the_other_till(desk, sandbox, other_till, wallet, AMOUNT)
    after = await until_closed(desk, held.intent_id, held)
    assert after.state is IntentState.NEEDS_REVIEW, after
    _never_declined(held, after)
    [view] = [v for v in review_views(ledger) if int(v.intent.id) == held.intent_id]
    assert theirs in {c.transaction.id for c in view.candidates}, view
    done = await desk.settle_review(held.intent_id, MarkNotCharged())
    assert done.state is IntentState.NOT_CHARGED and done.charged is False, done
    _never_declined(done)
    # the other till's customer's charge stands: nothing refunds it
    assert sandbox.transaction(theirs).status == "COMPLETED"
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == wallet.balance_mnt - AMOUNT


async def test_a_forgotten_key_409_offers_the_sales_own_row_and_the_owner_keeps_it(
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=_policy())
    # committed, but the reply is a 500; then the service forgets every key it is asked
    sandbox.arm_fault("error_after_commit", operation="charge")
    sandbox.arm_fault("forget_idempotency", count=10**6, operation="charge")
    held = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=1.0)
    [own] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    after = await until_closed(desk, held.intent_id, held)
    audit = [(a["kind"], a["outcome"]) for a in desk.listing.audit(held.intent_id)]
    assert ("charge", "TokenUsed") in audit or any("409" in str(a) for a in audit), audit
    assert after.state is IntentState.NEEDS_REVIEW, (after, audit)
    _never_declined(held, after)
    [view] = [v for v in review_views(ledger) if int(v.intent.id) == held.intent_id]
    assert own.id in {c.transaction.id for c in view.candidates}, view
    done = await desk.settle_review(held.intent_id, MarkCharged(own.id))
    assert done.charged is True and done.transaction is not None, done
    assert done.transaction.id == own.id
    _never_declined(done)
    assert len([t for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]) == 1


async def test_a_token_spent_on_another_terminal_is_a_review_without_rows_settled_not_charged(
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    sim_app: object,
    wallet: WalletInfo,
) -> None:
    """The token was spent at a till on *other* credentials (another terminal of the
    merchant): its row is not in this terminal's history. The 409 is no proof of absence
    (a forgotten key's own row could be unseen too): `unverified_conflict`, no row offered,
    and the owner's "not charged" ends it; the cashier never reads "declined"."""
    desk = ChargeDesk(ledger, asgi_client, policy=_policy())
    sandbox.arm_fault("error_before_commit", count=10**6, operation="charge")
    held = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=0.5)
    assert held.is_open, held
    sandbox.clear_faults()
    elsewhere = sandbox.create_terminal("m_demo")
    async with TerminalClient(
        "http://127.0.0.1",
        elsewhere.username,
        elsewhere.password,
        transport=asgi_transport(sim_app),
    ) as other:
        outcome = await other.charge(wallet.qr_token, AMOUNT, str(uuid.uuid4()))
    assert isinstance(outcome, Approved), outcome
    after = await until_closed(desk, held.intent_id, held)
    assert after.state is IntentState.NEEDS_REVIEW, after
    _never_declined(held, after)
    [view] = [v for v in review_views(ledger) if int(v.intent.id) == held.intent_id]
    assert outcome.transaction.id not in {c.transaction.id for c in view.candidates}
    audit = [(a["kind"], a["outcome"]) for a in desk.listing.audit(held.intent_id)]
    assert ("charge", "TokenUsed") in audit or any("409" in str(a) for a in audit), audit
    assert str(view.reason) == "unverified_conflict", view.reason
    done = await desk.settle_review(held.intent_id, MarkNotCharged())
    assert done.state is IntentState.NOT_CHARGED and done.charged is False, done
    _never_declined(done)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == wallet.balance_mnt - AMOUNT
