"""A sale through the outbox against the sandbox: charged once, or clearly not charged."""

from __future__ import annotations

import pytest

from qrpos import spec
from qrpos.ledger import (
    AmountOutOfRange,
    ChargeDesk,
    IntentState,
    Ledger,
    RetryPolicy,
    UnresolvedChargeExists,
)
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo


def charges_of(sandbox: Sandbox, wallet: WalletInfo) -> list[str]:
    return [
        tx.id
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet.wallet_id and tx.type is spec.TxType.CHARGE
    ]


async def test_approved_charge_is_stored_with_its_transaction(
    desk: ChargeDesk, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    result = await desk.charge(1500, wallet.qr_token, deadline_s=5)
    assert result.state is IntentState.APPROVED and result.charged is True
    assert result.transaction is not None
    assert charges_of(sandbox, wallet) == [result.transaction.id]
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 1500
    [view] = desk.listing.intents(include_final=True)
    assert view.transaction_id == result.transaction.id
    assert view.token == "…" + wallet.qr_token[-4:]


async def test_the_token_is_not_kept_once_the_sale_is_settled(
    desk: ChargeDesk, ledger: Ledger, wallet: WalletInfo
) -> None:
    await desk.charge(10, wallet.qr_token, deadline_s=5)
    raw = ledger.read(lambda c: c.execute("SELECT token FROM charge_intent").fetchall())
    assert [r[0] for r in raw] == [None]


async def test_dropped_response_retried_with_same_key_charges_once(
    desk: ChargeDesk, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    sandbox.arm_fault("drop_after_commit")
    result = await desk.charge(700, wallet.qr_token, deadline_s=5)
    assert result.state is IntentState.APPROVED
    assert len(charges_of(sandbox, wallet)) == 1
    kinds = [a["outcome"] for a in desk.listing.audit(result.intent_id)]
    assert kinds == ["Unresolved", "Approved"]


@pytest.mark.parametrize("kind", ["error_before_commit", "error_after_commit", "rate_limit"])
async def test_5xx_and_429_are_retried_and_charge_once(
    desk: ChargeDesk, sandbox: Sandbox, wallet: WalletInfo, kind: str
) -> None:
    sandbox.arm_fault(kind, count=2, retry_after=0)
    result = await desk.charge(300, wallet.qr_token, deadline_s=5)
    assert result.state is IntentState.APPROVED
    assert len(charges_of(sandbox, wallet)) == 1
    kinds = [a["kind"] for a in desk.listing.audit(result.intent_id)]
    if kind == "rate_limit":  # a 429 never reached the service: nothing to look for
        assert kinds == ["charge", "charge", "charge"]
    else:  # two unclear sends, then a look at the history before the third
        assert kinds == ["charge", "charge", "lookup", "charge"]


async def test_forgotten_key_after_drop_is_offered_to_a_person_with_its_row(
    desk: ChargeDesk, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    # the retry's key is forgotten: the service answers 409. The token was spent, by this
    # sale or by another install on the same credentials (the history cannot tell): the
    # row is found and offered, a person decides (review 3 of issue 47)
    sandbox.arm_fault("drop_after_commit")
    sandbox.arm_fault("forget_idempotency", count=2)
    result = await desk.charge(450, wallet.qr_token, deadline_s=5)
    assert result.state is IntentState.NEEDS_REVIEW and result.charged is None, result
    [review] = [r for r in desk.listing.reviews() if int(r.intent.id) == result.intent_id]
    assert review.reason == "unconfirmed_row"
    assert [c.transaction.id for c in review.candidates] == charges_of(sandbox, wallet)


async def test_stale_token_on_first_attempt_is_token_used(
    desk: ChargeDesk, asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    # the code was spent elsewhere (another till, another app): this outbox never saw it
    elsewhere = await asgi_client.charge(wallet.qr_token, 100, "spent-elsewhere")
    assert isinstance(elsewhere, Approved)
    again = await desk.charge(100, wallet.qr_token, deadline_s=5)
    assert again.state is IntentState.TOKEN_USED and again.charged is False
    assert len(charges_of(sandbox, wallet)) == 1


async def test_declined_is_final_and_not_charged(desk: ChargeDesk, sandbox: Sandbox) -> None:
    poor = sandbox.create_wallet(50)
    result = await desk.charge(60, poor.qr_token, deadline_s=5)
    assert result.state is IntentState.DECLINED and result.charged is False
    assert result.decline_code == spec.DeclineCode.INSUFFICIENT_FUNDS


async def test_401_stops_and_keeps_the_row(
    desk: ChargeDesk, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> None:
    sandbox.rotate_password(terminal.username)
    result = await desk.charge(100, wallet.qr_token, deadline_s=5)
    assert result.state is IntentState.CREDENTIALS_REJECTED and result.charged is False
    assert len(desk.listing.audit(result.intent_id)) == 1
    assert charges_of(sandbox, wallet) == []


async def test_second_sale_refused_while_first_unresolved(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(max_sends=1, settle_s=60))
    sandbox.arm_fault("error_after_commit")
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    first = await desk.charge(100, wallet.qr_token, deadline_s=0.3)
    assert first.state is IntentState.UNRESOLVED and first.charged is None
    other = sandbox.create_wallet(1000)
    with pytest.raises(UnresolvedChargeExists):
        await desk.charge(200, other.qr_token, deadline_s=5)
    assert [v.id for v in desk.listing.unresolved()] == [str(first.intent_id)]


async def test_same_sale_repeated_resumes_instead_of_charging_anew(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(max_sends=1, settle_s=60))
    sandbox.arm_fault("error_after_commit")
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    first = await desk.charge(100, wallet.qr_token, deadline_s=0.3)
    assert first.state is IntentState.UNRESOLVED
    sandbox.clear_faults()
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    again = await desk.charge(100, wallet.qr_token, deadline_s=5)
    assert again.intent_id == first.intent_id
    assert again.charged is True
    assert len(charges_of(sandbox, wallet)) == 1


async def test_out_of_range_amount_refused_before_anything_is_stored(
    desk: ChargeDesk, wallet: WalletInfo
) -> None:
    for amount in (0, spec.AMOUNT_MAX_MNT + 1):
        with pytest.raises(AmountOutOfRange):
            await desk.charge(amount, wallet.qr_token, deadline_s=5)
    assert desk.listing.intents(include_final=True) == []
