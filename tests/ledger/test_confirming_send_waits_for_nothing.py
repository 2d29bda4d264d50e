"""Issue 41: the till is not held for a send that cannot get through.

When the history shows a sale's charge while its key was never answered, the table asks
for a confirming send of the key (`lookup_match_to_confirm`: a send, no wait); since issue
47 the key keeps deciding while it may be sent (`timing.match_rule`). The confirming send goes at
once (no backoff before it), and the cashier's answer follows a request and a look-up
after the history showed the charge, even when the charge endpoint never answers.
"""

from __future__ import annotations

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, SaleProgress
from qrpos.ledger.events import Effect, SaleEvent
from qrpos.ledger.moves import sale_move
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, WalletInfo


def test_the_table_asks_for_the_confirming_send_without_a_wait() -> None:
    move = sale_move(IntentState.UNRESOLVED, SaleEvent.LOOKUP_MATCH_TO_CONFIRM)
    assert move.effects == (Effect.SEND,)
    assert Effect.WAIT not in move.effects


async def test_the_confirming_send_goes_out_without_a_backoff(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    # real backoffs (1 s, 2 s, ...), skipped only in the waiting, not in the schedule
    policy = RetryPolicy.testing(base_delay_s=1.0, max_delay_s=8.0)
    # the backoff's full ceiling every time (the jitter is handed in): a backoff before the
    # confirming send could not hide behind a lucky draw near 0
    desk = ChargeDesk(ledger, asgi_client, policy=policy, jitter=lambda: 1.0)
    # committed at once; the charge endpoint's next answers are lost (500 after commit)
    # until the key's first confirming send has met one of them
    sandbox.arm_fault("error_after_commit", count=3, operation="charge")
    steps: list[SaleProgress] = []
    result = await desk.charge(700, wallet.qr_token, deadline_s=20, on_progress=steps.append)
    # the key decides while it may be sent (issue 47): its replay is the proof
    assert result.state is IntentState.APPROVED, (result, steps)
    assert result.charged is True
    phases = [s.phase for s in steps]
    looked = [i for i, p in enumerate(phases) if p == "checking_history"]
    assert looked, phases
    # the look-up that found the match is followed by the confirming send, with no
    # backing off between them
    found = looked[0]
    assert phases[found + 1 : found + 2] == ["retrying"], phases
    audit = desk.listing.audit(result.intent_id)
    outcomes = [(a["kind"], a["outcome"]) for a in audit]
    assert ("lookup", "confirm_by_key") in outcomes, outcomes
    # after the match, the key's sends and look-ups alternate until the key answers
    after = outcomes[outcomes.index(("lookup", "confirm_by_key")) + 1 :]
    assert [k for k, _ in after] == ["charge", "lookup", "charge"], outcomes
    assert after[-1] == ("charge", "Approved"), outcomes
