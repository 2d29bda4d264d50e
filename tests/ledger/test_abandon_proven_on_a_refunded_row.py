"""Review of issue 41 (r41-attack): an abandoned sale proven charged on a row that already
has a refund in the queue is never refunded by its own refund, nor reviewed.

`lookup._judged` queues the abandoned sale's refund only `if reversal_for_tx(X) is None`,
yet moves the sale by `SALE_MOVES[abandoned][lookup_proven]` regardless: charged, watching
stopped, the refund "queued". `ChargeDesk._refund_abandoned` then returns the existing
reversal whatever its state, and a refused one is never sent again. The existing refund
is not the sale's (`intent_id` None: an owner's `qrpos reverse`), so `_answer_sale` never
tells the sale how it ended. The sale stays `abandoned`, charged, unwatched, with no
review: the customer's money held by a sale nobody looks at (issue 41's defect 1,
through a neighbouring door). With a manual refund still pending instead, the sale
never leaves `abandoned` when it lands (the money is right, the sale's state is not).

Interleaving:
  1. sale B (4500 MNT) commits X; its reply and every retry is a 500, the history cannot
     be read; the till gives up and the cashier abandons B (watched).
  2. the customer complains; the owner finds X and runs `qrpos reverse X` (behind the
     PIN); the service answers 403: the manual refund is `refused`.
  3. the history answers again; recovery proves X is B's (`lookup_proven`): no refund is
     queued (X already has one, refused), B stops watching.
  Expected: B is refunded by its own refund or lands in review (`refund_refused`).
  Found: B is `abandoned`, charged, not watched, not in review.
"""

from __future__ import annotations

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox

AMOUNT = 4500
#: review 3 of issue 47 (tests/ledger/test_review3_refunded_by_hand.py): a proof on a row a
#: refund made by hand holds is a window pairing too; the sale no longer takes that refund
#: as its own, a person does (rewritten there through a person's refund)


async def test_an_abandon_proven_on_a_row_refused_by_hand_is_not_left_silent(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(), jitter=lambda: 1.0)
    warm = await desk.charge(100, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    assert warm.charged  # the terminal id and the service's clock are known
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=10**6, operation="charge")
    sandbox.arm_fault("error_before_commit", count=10**6, operation="list")
    sale = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=2)
    assert sale.state is IntentState.UNRESOLVED, sale
    gave_up = await desk.abandon(sale.intent_id)
    assert gave_up.state is IntentState.ABANDONED, gave_up
    [charge] = [
        tx
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet.wallet_id and tx.type is spec.TxType.CHARGE
    ]
    # the owner refunds the customer's charge by hand; the service refuses it
    sandbox.clear_faults()
    sandbox.arm_fault("forbidden", count=10**6, operation="reverse")
    by_hand = await desk.reverse(charge.id, deadline_s=5)
    assert by_hand.state == "refused", by_hand
    # the history answers: recovery proves X is the abandoned sale's
    await desk.recover(deadline_s=5, patient=True)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - AMOUNT  # still charged
    after = next(
        r
        for r in desk.listing.intents(include_final=True)
        if r.kind == "charge" and r.id == str(sale.intent_id)
    )
    reviewed = [v.intent.id for v in desk.listing.reviews()]
    assert after.state == IntentState.NEEDS_REVIEW or str(sale.intent_id) in reviewed, (
        f"sale #{sale.intent_id} is {after.state}, charged={after.charged}, not reviewed: "
        "the customer's money is held and nobody is asked"
    )
