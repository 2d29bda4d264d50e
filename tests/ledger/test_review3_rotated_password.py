"""Review 3 of issue 47: a sale held by a 401 after an unclear send, the terminal then
re-paired to the SAME terminal (its password rotated on the dashboard).

The brief's question: the key is never resent after re-pairing (`_rejected_row`'s
`repaired` move: `may_resend` 0, the token dropped), so is the sale left unknown forever?
It is not: the same terminal's history is readable, the sale's own row is found, and since
the key may no longer speak the window pairing goes to a person with that row offered
(`unconfirmed_row`), who can settle it to the truth. The cost is that review: a resend of
the same key under the new password would have proven it by reply.
"""

from __future__ import annotations

import asyncio

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.ledger.reviews import MarkCharged
from qrpos.ledger.views import SaleProgress
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.simulator.testing import asgi_transport

AMOUNT = 5200


def _policy() -> RetryPolicy:
    return RetryPolicy.testing(max_sends=3, settle_s=0.3, lookup_interval_s=0.02, sleep=True)


async def test_a_sale_held_by_a_401_after_rotation_ends_in_a_review_it_can_settle(
    ledger: Ledger,
    asgi_client: TerminalClient,
    sim_app: object,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=_policy())
    sandbox.arm_fault("error_after_commit", count=1, operation="charge")  # committed, 500
    rotated: list[str] = []

    def on_progress(step: SaleProgress) -> None:
        if step.phase in ("retrying", "backing_off", "checking_history") and not rotated:
            rotated.append(sandbox.rotate_password(terminal.username))  # the dashboard

    held = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=5, on_progress=on_progress)
    assert rotated, "the password was never rotated: the story was not played"
    assert held.state is IntentState.CREDENTIALS_REJECTED, held
    [own] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    desk.replace_client(
        TerminalClient(
            "http://127.0.0.1", terminal.username, rotated[0], transport=asgi_transport(sim_app)
        )
    )
    after = held
    for _ in range(40):
        [after] = [r for r in await desk.recover(deadline_s=5) if r.intent_id == held.intent_id]
        if not after.is_open:
            break
        await asyncio.sleep(0.05)  # late commits settle (`settle_s`)
    assert after.state is IntentState.NEEDS_REVIEW, after
    [review] = desk.listing.reviews()
    assert review.reason == "unconfirmed_row", review
    assert [c.transaction.id for c in review.candidates] == [own.id], review
    settled = await desk.settle_review(held.intent_id, MarkCharged(own.id), actor="owner")
    assert settled.state is IntentState.CHARGED_PER_REVIEW, settled
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == wallet.balance_mnt - AMOUNT
