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
    records,
)
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, WalletInfo


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
        rows = ledger.read(lambda c: records.list_intents(c, include_final=True))
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
