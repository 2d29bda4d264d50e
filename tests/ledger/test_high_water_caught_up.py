"""Issue 47's long run, seed 201758: a service clock that ran ahead and stepped back
before this kiosk ever asked it stamps the sale's commit at the old high-water mark, ahead
of its own `Date`. The kiosk cannot look while that lasts (its look-ups fail) and looks
again only once the service's clock has caught up: the probe for rows stamped ahead then
finds nothing, the row lies past the window its `Date` placed, and the abandoned sale was
proven "not charged" while its wallet was charged. The first look after late commits
settled now bounds every commit of the sale (`IntentRow.probed_to`): the window reaches
it, the row is offered to a person."""

from __future__ import annotations

import asyncio

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, review_views
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox

AHEAD_S = 6.0


async def test_a_commit_at_a_mark_caught_up_before_the_first_look_is_never_not_charged(
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    other_till: TerminalClient,
) -> None:
    # one send: the resend horizon of the key is not what this story is about
    policy = RetryPolicy.testing(window_margin_s=0.5, settle_s=0.2, max_sends=1)
    desk = ChargeDesk(ledger, asgi_client, policy=policy)
    # another till on these credentials sells while the service's clock runs ahead
    sandbox.set_clock_offset(AHEAD_S)
    await other_till.charge(sandbox.create_wallet(1_000).qr_token, 700, "other-till-1")
    sandbox.set_clock_offset(0.0)  # NTP on the service steps it back: the mark is unseen
    wallet = sandbox.create_wallet(10_000)
    # committed, stamped at the mark; the 500 carries a `Date`: the window is placed narrow
    sandbox.arm_fault("error_after_commit", operation="charge")
    sandbox.arm_fault("error_before_commit", count=10**6, operation="list")
    held = await desk.charge(4_500, wallet.qr_token, deadline_s=1.0)
    assert held.is_open, held
    [own] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    abandoned = await desk.abandon(held.intent_id)
    assert abandoned.state is IntentState.ABANDONED
    # the service's clock passes its mark before the kiosk can look again
    await asyncio.sleep(AHEAD_S + 2.0)
    sandbox.clear_faults()
    after = abandoned
    for _ in range(20):
        after = await desk.resolve(held.intent_id, deadline_s=2.0)
        if after.state is not IntentState.ABANDONED:
            break
    assert after.state is not IntentState.NOT_CHARGED, after.message
    assert not (after.state is IntentState.ABANDONED and after.charged is False), after
    [view] = [v for v in review_views(ledger) if int(v.intent.id) == held.intent_id]
    assert own.id in {c.transaction.id for c in view.candidates}, (view.reason, own)
