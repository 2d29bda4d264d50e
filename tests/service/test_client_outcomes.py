"""Every outcome type of the client, produced by the real sandbox over both transports."""

from __future__ import annotations

import socket
import uuid

import pytest

from qrpos import spec
from qrpos.service import (
    AlreadyReversed,
    Approved,
    BadRequest,
    CredentialsRejected,
    Declined,
    Forbidden,
    NotFound,
    Page,
    Probe,
    RateLimited,
    Refunded,
    TerminalClient,
    TokenUsed,
    Unresolved,
    is_refunded,
)
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo


def key() -> str:
    return str(uuid.uuid4())


async def _approved(client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo) -> str:
    token = sandbox.wallet(wallet.wallet_id).qr_token
    outcome = await client.charge(token, 1000, key())
    assert isinstance(outcome, Approved)
    return outcome.transaction.id


async def test_approved_carries_the_parsed_transaction_and_exchange(
    client: TerminalClient, wallet: WalletInfo, terminal: TerminalCredentials
) -> None:
    outcome = await client.charge(wallet.qr_token, 1234, key())
    assert isinstance(outcome, Approved)
    tx = outcome.transaction
    assert (tx.amount_mnt, tx.status, tx.type) == (
        1234,
        spec.TxStatus.COMPLETED,
        spec.TxType.CHARGE,
    )
    assert (tx.vat_status, tx.vat_receipt_id) == (spec.VatStatus.PENDING, "")
    assert tx.terminal_id == terminal.terminal_id
    assert outcome.exchange.status == 201 and outcome.exchange.server_date is not None


@pytest.mark.parametrize("code", list(spec.DeclineCode)[:3])
async def test_declined_carries_the_code(
    client: TerminalClient, sandbox: Sandbox, code: spec.DeclineCode
) -> None:
    poor = sandbox.create_wallet(10)
    token = poor.qr_token if code != spec.DeclineCode.TOKEN_INVALID else "vqr_unknown"
    if code == spec.DeclineCode.WALLET_SUSPENDED:
        sandbox.suspend_wallet(poor.wallet_id)
    outcome = await client.charge(token, 5 if code != "insufficient_funds" else 11, key())
    assert isinstance(outcome, Declined) and outcome.code == code


async def test_token_used_on_a_spent_token(client: TerminalClient, wallet: WalletInfo) -> None:
    assert isinstance(await client.charge(wallet.qr_token, 10, key()), Approved)
    outcome = await client.charge(wallet.qr_token, 10, key())
    assert isinstance(outcome, TokenUsed) and outcome.message == spec.ErrorText.TOKEN_USED


async def test_bad_request_carries_the_service_text(
    client: TerminalClient, wallet: WalletInfo
) -> None:
    outcome = await client.charge(wallet.qr_token, 1_000_001, key())
    assert isinstance(outcome, BadRequest)
    assert outcome.message == spec.ErrorText.AMOUNT_NOT_POSITIVE
    reversal = await client.reverse("not-an-id")
    assert isinstance(reversal, BadRequest)
    assert reversal.message == spec.ErrorText.INVALID_TX_ID


async def test_credentials_rejected_on_rotation_and_suspension(
    client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    assert isinstance(await client.verify_credentials(), Page)
    sandbox.rotate_password(terminal.username)
    assert isinstance(await client.verify_credentials(), CredentialsRejected)
    assert isinstance(await client.charge("vqr_x", 5, key()), CredentialsRejected)
    assert isinstance(await client.reverse("tx_abc"), CredentialsRejected)


async def test_reverse_outcomes(
    client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    tx_id = await _approved(client, sandbox, wallet)
    first = await client.reverse(tx_id)
    second = await client.reverse(tx_id)
    assert isinstance(first, Refunded) and isinstance(second, AlreadyReversed)
    assert is_refunded(first) and is_refunded(second)
    assert isinstance(await client.reverse("tx_0000000000000000deadbeef"), NotFound)
    credit = sandbox.credit_wallet(wallet.wallet_id, 100)
    forbidden = await client.reverse(credit.id)
    assert isinstance(forbidden, Forbidden) and not is_refunded(forbidden)


async def test_rate_limited_carries_retry_after(
    client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    sandbox.arm_fault("rate_limit", retry_after=7)
    outcome = await client.charge(wallet.qr_token, 10, key())
    assert isinstance(outcome, RateLimited) and outcome.retry_after_s == 7.0
    sandbox.arm_fault("rate_limit", retry_after=None)
    outcome = await client.charge(wallet.qr_token, 10, key())
    assert isinstance(outcome, RateLimited) and outcome.retry_after_s is None


@pytest.mark.parametrize("fault", ["error_before_commit", "error_after_commit"])
async def test_5xx_is_unresolved_not_failed(
    client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo, fault: str
) -> None:
    sandbox.arm_fault(fault)
    outcome = await client.charge(wallet.qr_token, 10, key())
    assert isinstance(outcome, Unresolved) and outcome.sent


async def test_dropped_after_commit_is_unresolved_and_the_retry_replays_one_charge(
    client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    sandbox.arm_fault("drop_after_commit", operation="charge")
    same = key()
    lost = await client.charge(wallet.qr_token, 4321, same)
    assert isinstance(lost, Unresolved) and lost.sent
    assert "Error" not in lost.reason, lost.reason
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 4321  # it did happen
    retry = await client.charge(wallet.qr_token, 4321, same)
    assert isinstance(retry, Approved)
    charges = [t for t in sandbox.transactions() if t.type is spec.TxType.CHARGE]
    assert [t.id for t in charges] == [retry.transaction.id]
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 4321


async def test_timeout_is_unresolved(
    live_url: str, sim_app: object, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    from qrpos.simulator.testing import asgi_transport

    for transport in (None, asgi_transport(sim_app)):
        url = live_url if transport is None else "http://127.0.0.1"
        async with TerminalClient(
            url, terminal.username, terminal.password, timeout_s=0.2, transport=transport
        ) as slow:
            sandbox.arm_fault("delay", seconds=1.0)
            outcome = await slow.list_page()
            assert isinstance(outcome, Unresolved) and outcome.sent
            assert "0.2" in outcome.reason


async def test_connection_refused_is_unresolved_and_not_sent() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with TerminalClient(f"http://127.0.0.1:{port}", "term_abcdefgh", "vpt_" + "x" * 32) as c:
        outcome = await c.charge("vqr_x", 5, key())
    assert isinstance(outcome, Unresolved) and outcome.sent is False
    # the reason is read by people (the history's offline note, pair, verify): words, not
    # the transport's exception class (that stays in the log)
    assert outcome.reason == "cannot connect"


async def test_probes(client: TerminalClient, sandbox: Sandbox) -> None:
    health = await client.health()
    assert isinstance(health, Probe) and health.body["status"] == "ok"
    ready = await client.ready()
    assert isinstance(ready, Probe) and "deps" in ready.body
    sandbox.configure(ready_failed_dependency="tax-authority")
    assert isinstance(await client.ready(), Unresolved)


async def test_iter_transactions_pages_lazily_through_every_row(
    client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    from datetime import UTC, datetime, timedelta

    start = datetime.now(UTC) - timedelta(hours=3)
    ids = [
        sandbox.seed_charge(terminal.username, 10 + i, start + timedelta(seconds=i))
        for i in range(23)
    ]
    seen = [tx.id async for tx in client.iter_transactions(limit=5)]
    assert seen == ids[::-1]


async def test_listing_400_is_bad_request_with_the_text(client: TerminalClient) -> None:
    from datetime import UTC, datetime

    later = datetime(2025, 1, 2, tzinfo=UTC)
    outcome = await client.list_page(from_=later, to=datetime(2025, 1, 1, tzinfo=UTC))
    assert isinstance(outcome, BadRequest)
    assert outcome.message == spec.ErrorText.FROM_AFTER_TO
