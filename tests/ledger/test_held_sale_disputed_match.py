"""Issue 41: the till is not held for a send that cannot get through, even when the
history's rows cannot prove the sale by themselves.

The campaign's held sales (committed, reply lost, every later send dropped, the history
answering) kept the till on "checking" until the cashier gave up whenever another install
shared the credentials: the history showed rows the sale may own, but only a person could
tell them apart (`foreign_activity`), and a dispute waits for late commits to settle. Each
further send of the key ended unclear and began the settling anew, so it never settled
(one sale sent and looked 1,826 times). The key was never answered, so the table gives it
one confirming send, as for a proof; after that the key is not sent again
(`timing.key_had_its_say`), the dispute settles, and the sale goes to a person's review:
the cashier's answer is "a person checks this payment", never "declined".
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo


async def test_a_held_sale_with_a_disputed_match_is_answered(
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    # another install sharing the credentials took the same amount a moment ago
    sandbox.seed_charge(terminal.username, 700, datetime.now(UTC) - timedelta(seconds=1))
    settle_s = 0.5
    policy = RetryPolicy.testing(max_sends=3, settle_s=settle_s, lookup_interval_s=0.02, sleep=True)
    desk = ChargeDesk(ledger, asgi_client, policy=policy)
    # committed at once; every later send of the key is lost after the service replays it
    sandbox.arm_fault("drop_after_commit", count=10**6, operation="charge")
    started = time.monotonic()
    result = await desk.charge(700, wallet.qr_token, deadline_s=15)
    took = time.monotonic() - started
    # the till has its answer: a person decides which row is whose (never "declined")
    assert result.state is IntentState.NEEDS_REVIEW, (result, took)
    assert result.charged is None
    [review] = desk.listing.reviews()
    assert review.reason == "foreign_activity"
    own = [tx.id for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    assert own and own[0] in [c.transaction.id for c in review.candidates]
    audit = desk.listing.audit(result.intent_id)
    outcomes = [(a["kind"], a["outcome"]) for a in audit]
    assert ("lookup", "confirm_by_key") in outcomes, outcomes
    # the key spoke once more after the match, and was not sent again
    after = outcomes[outcomes.index(("lookup", "confirm_by_key")) + 1 :]
    assert [k for k, _ in after].count("charge") == 1, outcomes
    # the wallet was charged once (every send under the one key)
    assert len(own) == 1
