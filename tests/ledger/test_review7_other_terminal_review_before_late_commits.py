"""Review 7: after a re-pairing, a sale sent under the old terminal goes to review
(`other_terminal`) at once, before late commits have had `settle_s`, and the owner's
"not charged" is taken while the old terminal may still commit the sale's request.

docs/charge-safety.md, rule 4: "A review opens once late commits have had `settle_s`";
before that "the sale's own row may not be listed yet, and a review offers only the rows
it lists" (`ledger/claims.py`). `resolver._paired_elsewhere` opens the review on the first
pass after the re-pairing, whatever the time since the sale's last unclear request, and
`reviews.decide` takes "not charged" on it. An `other_terminal` review offers no rows:
the owner reads the old terminal's dashboard, which cannot show a commit not made yet.

Story (sandbox over real HTTP, the real desk): sale B goes out under terminal T1; the
service holds the request (a slow server: it commits it after 3 s, even though the
caller hung up at its 1 s timeout); the owner re-pairs the kiosk to T2 of the same merchant
and resolves B: B is in review at once; T1's history shows no charge of B's wallet, so the
owner says "not charged". Then T1 commits B's request: the customer is charged, the books
say "not charged". Fixed: `resolver.drive` waits `settle_s` after the sale's last unclear
request before it opens the review (`timing.settle_left`).
"""

from __future__ import annotations

import asyncio

from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    MarkNotCharged,
    RetryPolicy,
    ReviewRefused,
)
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

AMOUNT = 6000
SLOW_S = 3.0
SETTLE_S = SLOW_S + 2.0


async def test_a_sale_of_the_old_pairing_is_not_settled_before_late_commits(
    ledger: Ledger,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    policy = RetryPolicy.testing(max_sends=1, settle_s=SETTLE_S, sleep=True)
    async with TerminalClient(live_url, terminal.username, terminal.password, timeout_s=1.0) as t1:
        desk = ChargeDesk(ledger, t1, policy=policy)
        warm = await desk.charge(100, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
        assert warm.charged
        sandbox.arm_fault("delay", operation="charge", seconds=SLOW_S)
        # (its same-key resends meet a failing charge endpoint: nothing answers the key)
        sandbox.arm_fault("error_before_commit", count=10**6, operation="charge")
        held = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=1.5)
        assert held.is_open, held
    # the owner re-pairs the kiosk to another terminal of the merchant
    t2_terminal = sandbox.create_terminal("m_demo")
    async with TerminalClient(live_url, t2_terminal.username, t2_terminal.password) as t2:
        desk = ChargeDesk(ledger, t2, policy=policy)
        sandbox.clear_faults()
        after = await desk.resolve(held.intent_id, deadline_s=0.5)
        decided = None
        if after.state is IntentState.NEEDS_REVIEW:
            # the old terminal's dashboard shows no charge of this wallet (yet)
            assert not [t for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]
            try:
                decided = await desk.settle_review(held.intent_id, MarkNotCharged())
            except ReviewRefused:
                decided = None
        await asyncio.sleep(SLOW_S)  # the old terminal commits the request it held
        charged = [t for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]
        assert len(charged) == 1, charged  # the customer was charged, under T1
        assert decided is None or decided.state is not IntentState.NOT_CHARGED, (
            decided,
            charged,
        )
        # once late commits have had settle_s, a person decides (the old terminal's
        # dashboard now shows the charge)
        later = await desk.resolve(held.intent_id, deadline_s=SETTLE_S + 2.0)
        assert later.state is IntentState.NEEDS_REVIEW, later
