"""Review of issue 41 (r41-attack): the confirming send is marked by two wall-clock stamps.

`timing.waits_for_key` says "the next request must be the confirming send" while
`last_sent_at < matched_at`, both wall times of this process. Its docstring promises that
a clock step between them "costs at most one more send of the same key, never a skipped
one". A step *back* between the look-up that found the match (`matched_at`) and the
confirming send (`last_sent_at`) keeps `last_sent_at < matched_at` after the send, for as
long as the step (hours). Until then every further send is taken for "the confirming
send": the drive skips its backoff (`if not first and not waits_for_key(row)`) and
`look_first` never asks for a look-up, so the rest of the burst goes out back to back,
ignoring the backoff and a 429's Retry-After, and the match waits for all of it. With
the charge endpoint black-holed (the case the rule was written for), each of those sends
is a 30 s timeout: the till is held for the rest of the burst (up to the resend horizon,
300 s) instead of "a request timeout and a look-up" (45 s).

Interleaving (max_sends=6, the charge endpoint commits once and then answers 500):
  1. send #1 commits X, its reply is a 500 (unclear); send #2: 500 (unclear).
  2. look-up: X is proven this sale's, the key was never answered ->
     `lookup_match_to_confirm`, `matched_at = T`.
  3. NTP steps the Pi's wall clock back 2 h.
  4. the confirming send #3 goes out, `last_sent_at = T - 7200 < matched_at`: 500.
  5. expected: a look-up decides on the match. Found: sends #4, #5, #6 back to back, no
     backoff and no look-up between them, and only then the look-up.

A fix would mark the confirming send by a count (e.g. the attempts at the match), not by
comparing two wall stamps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, SaleProgress
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, WalletInfo

STEP_BACK_S = -2 * 3600.0


async def test_a_clock_step_back_before_the_confirming_send_sends_the_burst_unpaced(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    ahead = {"s": 0.0}
    policy = RetryPolicy.testing(base_delay_s=1.0, max_delay_s=8.0, max_sends=6)
    steps: list[SaleProgress] = []
    looked = {"n": 0}

    def seen(step: SaleProgress) -> None:
        steps.append(step)
        if step.phase == "checking_history":
            looked["n"] += 1
        elif looked["n"] == 1 and step.phase == "retrying" and ahead["s"] == 0.0:
            # the look-up that found the match has committed `matched_at`; NTP steps the
            # wall clock back before the confirming send stamps `last_sent_at`
            ahead["s"] = STEP_BACK_S

    desk = ChargeDesk(
        ledger,
        asgi_client,
        policy=policy,
        clock=lambda: datetime.now(UTC) + timedelta(seconds=ahead["s"]),
        jitter=lambda: 1.0,
    )
    # committed at once; the charge endpoint's answers are lost (500 after commit) for
    # more sends than the burst
    sandbox.arm_fault("error_after_commit", count=8, operation="charge")
    result = await desk.charge(700, wallet.qr_token, deadline_s=20, on_progress=seen)
    assert ahead["s"] == STEP_BACK_S, [s.phase for s in steps]  # the step happened
    assert result.state is IntentState.APPROVED, (result, steps)  # the key's replay
    outcomes = [(a["kind"], a["outcome"]) for a in desk.listing.audit(result.intent_id)]
    assert ("lookup", "confirm_by_key") in outcomes, outcomes
    after = outcomes[outcomes.index(("lookup", "confirm_by_key")) + 1 :]
    # the confirming sends are paced: a look-up between any two (never the burst again)
    kinds = ",".join(k for k, _ in after)
    assert "charge,charge" not in kinds and kinds.startswith("charge,lookup"), outcomes
