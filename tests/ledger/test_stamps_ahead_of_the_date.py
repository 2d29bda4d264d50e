"""A service whose clock stepped back stamps commits ahead of its own `Date`.

Its commit times never go back: after its clock went back it stamps at its old high-water
mark until the clock has caught up. A kiosk that first met the service after the step never
saw the mark, so the window its `Date` placed for a sale ends long before the sale's charge
was stamped. Found by the till simulator (issue 47, seed 74 of `benchmarks/till_sim.py`
before the fix: the service's clock 600 s back, the sale's first send committed and
answered 500, the cashier abandoned it, and the look-ups proved it absent: "not charged"
while the wallet held the money). Played here over real HTTP (uvicorn on loopback).
"""

from __future__ import annotations

import asyncio
import uuid

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

AMOUNT = 4500


def _policy() -> RetryPolicy:
    return RetryPolicy.testing(max_sends=3, settle_s=0.3, lookup_interval_s=0.02, sleep=True)


async def test_a_charge_stamped_past_the_window_is_never_proven_absent(
    ledger: Ledger,
    http_client: TerminalClient,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    # the service commits a charge (another till's, another amount) on its clock...
    other = sandbox.create_wallet(100_000)
    async with TerminalClient(live_url, terminal.username, terminal.password) as till:
        assert isinstance(await till.charge(other.qr_token, 7500, str(uuid.uuid4())), Approved)
    # ...then its clock goes back ten minutes, before this kiosk ever talked to it
    sandbox.set_clock_offset(-600.0)
    desk = ChargeDesk(ledger, http_client, policy=_policy())
    # the sale's first send commits and is answered 500, and so is every resend
    sandbox.arm_fault("error_after_commit", count=10**6, operation="charge")
    result = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=1.5)
    assert result.is_open, result
    [charge] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    abandoned = await desk.abandon(result.intent_id)
    after = abandoned
    for _ in range(60):  # the watch of an abandoned sale: one look each pass
        after = await desk.resolve(result.intent_id, deadline_s=10)
        if after.state is not IntentState.ABANDONED or after.charged is not None:
            break
        await asyncio.sleep(0.05)  # late commits settle (`settle_s`)
    # never "not charged": the charge, stamped 600 s past the window the `Date` placed, is
    # found and offered to a person (an abandoned sale's row goes to review, issue 47)
    assert after.state is IntentState.NEEDS_REVIEW, after
    [review] = desk.listing.reviews()
    assert charge.id in [c.transaction.id for c in review.candidates], review
