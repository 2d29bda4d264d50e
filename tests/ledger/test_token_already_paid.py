"""A code that already paid for a sale of this outbox is refused before anything is stored
or sent (the service retires a token at its first charge).

Found by the 1000-sale fault campaign: `qrpos charge` was killed after its sale had
completed, the same command was run again "to resume it", a new intent went out, met
409 `qr token already used`, and ended `token_used`: the operator read "not charged" for
a sale the customer had paid (19 times in 1000 sales). Resuming the finished sale instead
would be as wrong the other way: a kiosk whose phone still shows an old code would show
"approved" for a new sale nobody paid.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from headless import qrpos
from qrpos import spec
from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    RetryPolicy,
    TokenAlreadyPaid,
    TokenInReview,
    sales_sql,
)
from qrpos.ledger.reviews import MarkCharged, MarkNotCharged
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo


def _charges(sandbox: Sandbox, wallet: WalletInfo) -> list[str]:
    return [
        tx.id
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet.wallet_id and tx.type is spec.TxType.CHARGE
    ]


@pytest.mark.parametrize("again_mnt", [700, 900])
async def test_a_code_that_paid_is_refused_with_the_sale_it_paid(
    again_mnt: int,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    wallet: WalletInfo,
    tmp_path: Path,
) -> None:
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    try:
        first = await desk.charge(700, wallet.qr_token, deadline_s=5.0)
        assert first.state is IntentState.APPROVED and first.transaction is not None
        with pytest.raises(TokenAlreadyPaid) as refused:
            await desk.charge(again_mnt, wallet.qr_token, deadline_s=5.0)
        assert refused.value.intent_id == first.intent_id
        assert refused.value.tx_id == first.transaction.id
        assert wallet.qr_token not in str(refused.value)
        # nothing stored, nothing sent
        rows = ledger.read(lambda c: sales_sql.list_intents(c, include_final=True))
        assert [r.id for r in rows] == [first.intent_id]
        assert _charges(sandbox, wallet) == [first.transaction.id]
    finally:
        ledger.close()


async def test_a_declined_code_may_pay_for_the_next_sale(
    asgi_client: TerminalClient, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A decline retires nothing: the same code pays once the amount fits the wallet."""
    poor = sandbox.create_wallet(1_000)
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    try:
        declined = await desk.charge(5_000, poor.qr_token, deadline_s=5.0)
        assert declined.state is IntentState.DECLINED
        paid = await desk.charge(800, poor.qr_token, deadline_s=5.0)
        assert paid.state is IntentState.APPROVED
    finally:
        ledger.close()


def test_running_charge_again_after_it_completed_says_which_sale_it_paid(
    cli_env: dict[str, str], sandbox: Sandbox
) -> None:
    """The campaign's case, as an operator meets it: the same command twice."""
    wallet = sandbox.create_wallet(100_000)
    argv = ("charge", "--amount", "2500", "--token", wallet.qr_token)
    done = qrpos(cli_env, *argv)
    assert done.returncode == 0, done.stderr
    tx_id = json.loads(done.stdout)["id"]
    again = qrpos(cli_env, *argv)
    assert again.returncode == 1  # refused locally: nothing was sent
    assert "already paid for charge #1" in again.stderr and tx_id in again.stderr
    assert "declined" not in again.stderr.lower()
    assert wallet.qr_token not in again.stderr + again.stdout
    assert _charges(sandbox, wallet) == [tx_id]


async def _sale_in_review(
    desk: ChargeDesk, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> int:
    """A sale of 1,200 that was charged and lost every reply, with a stranger's row of the
    same amount in its window: the key kept its say until the cashier gave up (issue 47),
    and the history's rows are for a person to decide."""
    sandbox.seed_charge(terminal.username, 1_200, datetime.now(UTC))
    sandbox.arm_fault("drop_after_commit", count=10**6, operation="charge")
    held = await desk.charge(1_200, wallet.qr_token, deadline_s=0.5)
    assert held.state is IntentState.UNRESOLVED
    await desk.abandon(held.intent_id)
    sandbox.clear_faults()
    [reviewed] = await desk.recover(deadline_s=5.0)
    assert reviewed.state is IntentState.NEEDS_REVIEW and reviewed.charged is None
    assert len(_charges(sandbox, wallet)) == 1
    return held.intent_id


@pytest.mark.parametrize("again_mnt", [1_200, 300])
async def test_a_code_whose_sale_waits_for_review_is_not_charged_again(
    again_mnt: int,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
    tmp_path: Path,
) -> None:
    """A new key for that code could only meet 409 (its own earlier charge) and end "not
    charged": the cashier would ask the customer to pay again for a sale that was paid."""
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    try:
        balance = sandbox.wallet(wallet.wallet_id).balance_mnt
        held = await _sale_in_review(desk, sandbox, terminal, wallet)
        sent_before = len(sandbox.transactions())
        with pytest.raises(TokenInReview) as refused:
            await desk.charge(again_mnt, wallet.qr_token, deadline_s=5.0)
        assert refused.value.intent_id == held
        assert "review" in str(refused.value) and wallet.qr_token not in str(refused.value)
        rows = ledger.read(lambda c: sales_sql.list_intents(c, include_final=True))
        assert [r.id for r in rows] == [held]  # nothing stored
        assert len(sandbox.transactions()) == sent_before  # nothing sent
        # the owner settles it by the truth, the customer's own row: paid, and the code
        # that paid is refused as already paid, still with nothing sent
        [review] = desk.listing.reviews()
        [own] = _charges(sandbox, wallet)
        assert review.intent.id == str(held)
        assert own in [c.transaction.id for c in review.candidates]
        paid = await desk.settle_review(held, MarkCharged(own))
        assert paid.state is IntentState.CHARGED_PER_REVIEW and paid.charged is True
        with pytest.raises(TokenAlreadyPaid) as again:
            await desk.charge(again_mnt, wallet.qr_token, deadline_s=5.0)
        assert again.value.intent_id == held and again.value.tx_id == own
        assert _charges(sandbox, wallet) == [own]
        assert sandbox.wallet(wallet.wallet_id).balance_mnt == balance - 1_200
    finally:
        ledger.close()


async def test_a_code_the_owner_marked_not_charged_may_pay_again(
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    tmp_path: Path,
) -> None:
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(max_sends=2))
    unpaid = sandbox.create_wallet(100_000)
    try:
        strangers = [
            sandbox.seed_charge(terminal.username, 1_300, datetime.now(UTC)) for _ in range(2)
        ]
        # every send fails before it commits, but a 500 cannot say so: the key keeps its
        # say until the cashier gives up (issue 47), then the rows in its window (both a
        # stranger's) are for a person to decide
        sandbox.arm_fault("error_before_commit", count=10**6, operation="charge")
        held = await desk.charge(1_300, unpaid.qr_token, deadline_s=0.5)
        await desk.abandon(held.intent_id)
        sandbox.clear_faults()
        [reviewed] = await desk.recover(deadline_s=5.0)
        assert reviewed.state is IntentState.NEEDS_REVIEW and reviewed.charged is None
        assert _charges(sandbox, unpaid) == []
        [review] = desk.listing.reviews()
        assert sorted(c.transaction.id for c in review.candidates) == sorted(strangers)
        # the owner, who knows the customer was not charged, says so: nothing refunded
        settled = await desk.settle_review(held.intent_id, MarkNotCharged())
        assert settled.state is IntentState.NOT_CHARGED and settled.charged is False
        assert all(sandbox.transaction(tx).status is spec.TxStatus.COMPLETED for tx in strangers)
        paid = await desk.charge(1_300, unpaid.qr_token, deadline_s=5.0)
        assert paid.state is IntentState.APPROVED and paid.transaction is not None
        assert _charges(sandbox, unpaid) == [paid.transaction.id]
        assert sandbox.wallet(unpaid.wallet_id).balance_mnt == 100_000 - 1_300
    finally:
        ledger.close()


def test_running_charge_again_while_its_sale_waits_for_review_sends_nothing(
    cli_env: dict[str, str], sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    """The campaign's case: the first run ended in review, the operator ran it again."""
    wallet = sandbox.create_wallet(100_000)
    sandbox.seed_charge(terminal.username, 2_500, datetime.now(UTC))
    sandbox.arm_fault("drop_after_commit", operation="charge")
    sandbox.arm_fault("forget_idempotency", count=3, operation="charge")
    argv = ("charge", "--amount", "2500", "--token", wallet.qr_token, "--deadline", "30")
    first = qrpos(cli_env, *argv)
    sandbox.clear_faults()
    assert "review" in first.stdout + first.stderr, first.stderr
    [tx_id] = _charges(sandbox, wallet)
    again = qrpos(cli_env, *argv)
    assert again.returncode == 1, again.stderr  # refused locally: nothing was sent
    assert "waits for the owner's review" in again.stderr
    assert "not charged" not in again.stderr.lower()
    assert wallet.qr_token not in again.stderr + again.stdout
    assert _charges(sandbox, wallet) == [tx_id]
