"""Issue 47's long run, seed 201758: a service clock that ran ahead and stepped back
before this kiosk ever asked it stamps the sale's commit at the old high-water mark, ahead
of its own `Date`. The kiosk cannot look while that lasts (its look-ups fail) and looks
again only once the service's clock has caught up: the probe for rows stamped ahead then
finds nothing, the row lies past the window its `Date` placed, and the abandoned sale was
proven "not charged" while its wallet was charged. The first look after late commits
settled now bounds every commit of the sale (`IntentRow.probed_to`): the window reaches
it, the row is offered to a person."""

from __future__ import annotations

from ledger_stories import abandoned_at_an_unseen_mark

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, review_views
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox


async def test_a_commit_at_a_mark_caught_up_before_the_first_look_is_never_not_charged(
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    other_till: TerminalClient,
) -> None:
    # one send: the resend horizon of the key is not what this story is about
    policy = RetryPolicy.testing(window_margin_s=0.5, settle_s=0.2, max_sends=1)
    desk = ChargeDesk(ledger, asgi_client, policy=policy)
    abandoned, own, _ = await abandoned_at_an_unseen_mark(desk, sandbox, other_till)
    after = abandoned
    for _ in range(20):
        after = await desk.resolve(abandoned.intent_id, deadline_s=2.0)
        if after.state is not IntentState.ABANDONED:
            break
    assert after.state is not IntentState.NOT_CHARGED, after.message
    assert not (after.state is IntentState.ABANDONED and after.charged is False), after
    [view] = [v for v in review_views(ledger) if int(v.intent.id) == abandoned.intent_id]
    assert own.id in {c.transaction.id for c in view.candidates}, (view.reason, own)
