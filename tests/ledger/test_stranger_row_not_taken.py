"""Issue 47, defects 2 and 4: a stranger's row taken as the sale's own.

The service's history carries no key, token, wallet or reference: a row is tied to a sale
by amount and time alone, and another install on the same credentials (a second till set
up with the same username, a cloned SD card) is invisible until its rows show. Each test
plays the issue's story through the sandbox over real HTTP (uvicorn on loopback), the
other install being a second client on the same credentials charging another wallet.

- defect 2: every send of a sale fails before anything commits; the cashier abandons it;
  the other install charges the same amount within its window. The kiosk used to pair
  that row with the abandoned sale and refund it: the stranger's charge ended REVERSED.
- defect 4: an open sale's first two sends fail before anything commits; the other
  install charges the same amount; the history shows that row; the sale's confirming
  send meets 429, its resend 429 again. The kiosk used to end the sale "charged per
  history" on the stranger's row: the meal handed over, the customer never charged.
"""

from __future__ import annotations

import asyncio
import uuid

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.ledger.views import SaleProgress
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

AMOUNT = 6000
COMPLETED = spec.TxStatus.COMPLETED


def _policy() -> RetryPolicy:
    return RetryPolicy.testing(max_sends=3, settle_s=0.3, lookup_interval_s=0.02, sleep=True)


async def _another_install_charges(
    live_url: str, terminal: TerminalCredentials, sandbox: Sandbox
) -> tuple[WalletInfo, str]:
    """A second install on the same credentials charges another wallet `AMOUNT`."""
    stranger = sandbox.create_wallet(100_000)
    async with TerminalClient(live_url, terminal.username, terminal.password) as other:
        outcome = await other.charge(stranger.qr_token, AMOUNT, str(uuid.uuid4()))
    assert isinstance(outcome, Approved), outcome
    return stranger, outcome.transaction.id


def _status(sandbox: Sandbox, tx_id: str) -> spec.TxStatus:
    [tx] = [tx for tx in sandbox.transactions() if tx.id == tx_id]
    return tx.status


async def test_an_abandoned_sale_never_refunds_another_installs_charge(
    ledger: Ledger,
    http_client: TerminalClient,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, http_client, policy=_policy())
    # every send of the sale fails before the service commits anything (never charged)
    sandbox.arm_fault("error_before_commit", count=10**6, operation="charge")
    result = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=1.5)
    assert result.is_open, result
    abandoned = await desk.abandon(result.intent_id)
    assert abandoned.state is IntentState.ABANDONED
    sandbox.clear_faults()
    # within the sale's window another install charges another wallet the same amount
    stranger, tx_id = await _another_install_charges(live_url, terminal, sandbox)
    after = abandoned
    for _ in range(40):  # the watch of an abandoned sale: one look each pass
        after = await desk.resolve(result.intent_id, deadline_s=10)
        if after.state is not IntentState.ABANDONED or _status(sandbox, tx_id) != COMPLETED:
            break
        await asyncio.sleep(0.05)  # late commits settle (`settle_s`)
    # the stranger's charge stands; the window pairing alone goes to a person, with the
    # row offered (who may refund it, knowing the customer, or say "not charged")
    assert _status(sandbox, tx_id) is COMPLETED, after
    assert after.state is IntentState.NEEDS_REVIEW, after
    [review] = desk.listing.reviews()
    assert review.reason == "unconfirmed_row"
    assert tx_id in [c.transaction.id for c in review.candidates]
    assert not [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    assert stranger.wallet_id != wallet.wallet_id


async def test_a_429_storm_never_makes_another_installs_row_paid(
    ledger: Ledger,
    http_client: TerminalClient,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    # within the sale's window another install charges another wallet the same amount
    _, tx_id = await _another_install_charges(live_url, terminal, sandbox)
    desk = ChargeDesk(ledger, http_client, policy=_policy())
    # the sale's first two sends fail before anything commits
    sandbox.arm_fault("error_before_commit", count=2, operation="charge")
    armed: list[SaleProgress] = []

    def on_progress(step: SaleProgress) -> None:
        if step.phase == "checking_history" and not armed:
            armed.append(step)  # the history shows the row: the confirming send meets 429s
            sandbox.arm_fault("rate_limit", count=2, operation="charge", retry_after=0.1)

    result = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=15, on_progress=on_progress)
    assert armed, "the history was never read: the story was not played"
    outcomes = [(a["kind"], a["outcome"]) for a in desk.listing.audit(result.intent_id)]
    assert [o for k, o in outcomes if o == "RateLimited"] == ["RateLimited"] * 2, outcomes
    own = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    # "paid" only on the customer's own charge: the key, sent after the 429s, charged once
    assert result.state is IntentState.APPROVED, (result, outcomes)
    assert len(own) == 1 and result.transaction is not None, (result, own)
    assert result.transaction.id == own[0].id != tx_id, (result, own)
