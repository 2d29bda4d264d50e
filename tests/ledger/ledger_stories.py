"""Stories more than one ledger test plays (a helper module of tests/ledger, not a test)."""

from __future__ import annotations

import asyncio
import uuid

from qrpos.ledger import ChargeDesk, IntentState, SaleResult
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox, SimTransaction, TerminalCredentials, WalletInfo

#: how far the service's clock ran ahead before it stepped back (seconds)
AHEAD_S = 6.0


async def abandoned_at_an_unseen_mark(
    desk: ChargeDesk, sandbox: Sandbox, other_till: TerminalClient
) -> tuple[SaleResult, SimTransaction, str]:
    """Issue 47's long run, seed 201758, up to the first look that gets through: another
    till on these credentials sells while the service's clock runs ahead; NTP steps it
    back (the high-water mark unseen by this kiosk); the sale's send commits, stamped at
    the mark, and is answered 500 with a `Date` (the window placed narrow); every look-up
    fails; the cashier abandons; the service's clock passes its mark; faults cleared.
    Returns the abandoned sale, its charge in the books and the wallet charged."""
    sandbox.set_clock_offset(AHEAD_S)
    await other_till.charge(sandbox.create_wallet(1_000).qr_token, 700, "other-till-1")
    sandbox.set_clock_offset(0.0)
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", operation="charge")
    sandbox.arm_fault("error_before_commit", count=10**6, operation="list")
    held = await desk.charge(4_500, wallet.qr_token, deadline_s=1.0)
    assert held.is_open, held
    [own] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    abandoned = await desk.abandon(held.intent_id)
    assert abandoned.state is IntentState.ABANDONED
    await asyncio.sleep(AHEAD_S + 2.0)
    sandbox.clear_faults()
    return abandoned, own, wallet.wallet_id


async def token_spent_at_the_other_till(
    desk: ChargeDesk,
    sandbox: Sandbox,
    other_till: TerminalClient,
    wallet: WalletInfo,
    amount: int,
) -> tuple[SaleResult, str]:
    """Review 3 of issue 47: the sale's sends never reach the service (unclear: no
    answer); the same customer's QR is then charged at another till on the same
    credentials for the same price. Returns the held sale and the other till's row."""
    sandbox.arm_fault("error_before_commit", count=10**6, operation="charge")
    held = await desk.charge(amount, wallet.qr_token, deadline_s=0.5)
    assert held.is_open, held
    sandbox.clear_faults()
    outcome = await other_till.charge(wallet.qr_token, amount, str(uuid.uuid4()))
    assert isinstance(outcome, Approved), outcome
    return held, outcome.transaction.id


async def until_closed(desk: ChargeDesk, intent_id: int, first: SaleResult) -> SaleResult:
    """The sale resolved until it closes (40 tries at most)."""
    after = first
    for _ in range(40):
        after = await desk.resolve(intent_id, deadline_s=5)
        if not after.is_open:
            break
        await asyncio.sleep(0.05)
    return after


async def until_concluded(desk: ChargeDesk, intent_id: int, first: SaleResult) -> SaleResult:
    """An abandoned sale resolved until the history concludes it (its state moves, or
    what is known of `charged` does): 20 looks at most."""
    after = first
    for _ in range(20):
        after = await desk.resolve(intent_id, deadline_s=2.0)
        if after.state is not IntentState.ABANDONED or after.charged is not None:
            break
    return after


async def stranger_row(
    live_url: str, terminal: TerminalCredentials, sandbox: Sandbox, amount: int
) -> str:
    """Another install on the same credentials charges another wallet `amount`: its row."""
    stranger = sandbox.create_wallet(100_000)
    async with TerminalClient(live_url, terminal.username, terminal.password) as other:
        outcome = await other.charge(stranger.qr_token, amount, str(uuid.uuid4()))
    assert isinstance(outcome, Approved), outcome
    return outcome.transaction.id
