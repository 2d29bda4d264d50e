"""Reverse a charge: every status-map row and numbered rule, over TCP and in-process."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

from .conftest import Charge, assert_text_error, auth


async def _reverse(
    raw: httpx.AsyncClient, creds: TerminalCredentials, tx_id: str
) -> httpx.Response:
    return await raw.post(f"/v1/transactions/{tx_id}/reverse", auth=auth(creds))


async def test_reversal_is_204_empty_and_credits_the_full_amount(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    tx_id = (await charge(wallet.qr_token, 4200)).json()["id"]
    response = await _reverse(raw, terminal, tx_id)
    assert response.status_code == 204
    assert response.content == b""
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000
    listed = (await raw.get(spec.LIST_PATH, auth=auth(terminal))).json()["transactions"]
    assert listed[0]["id"] == tx_id
    assert (listed[0]["status"], listed[0]["amountMNT"]) == ("REVERSED", 4200)


async def test_second_reversal_is_409_and_refunds_nothing_more(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    tx_id = (await charge(wallet.qr_token, 500)).json()["id"]
    assert (await _reverse(raw, terminal, tx_id)).status_code == 204
    assert_text_error(await _reverse(raw, terminal, tx_id), 409, spec.ErrorText.ALREADY_REVERSED)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000


async def test_other_merchants_charge_and_non_charges_are_403_alike(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    stranger = sandbox.create_terminal("m_other")
    theirs = (await charge(wallet.qr_token, 50, creds=stranger)).json()["id"]
    credit = sandbox.credit_wallet(wallet.wallet_id, 1000).id
    reclaim = sandbox.reclaim_wallet(sandbox.create_wallet(70).wallet_id).id
    for tx_id in (theirs, credit, reclaim):
        assert_text_error(await _reverse(raw, terminal, tx_id), 403, spec.ErrorText.FORBIDDEN)
    assert sandbox.transaction(theirs).status is spec.TxStatus.COMPLETED


async def test_same_merchant_other_terminal_may_reverse(
    raw: httpx.AsyncClient, charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    colleague = sandbox.create_terminal("m_demo")
    tx_id = (await charge(wallet.qr_token, 50)).json()["id"]
    assert (await _reverse(raw, colleague, tx_id)).status_code == 204


async def test_unknown_well_formed_id_is_404(
    raw: httpx.AsyncClient, terminal: TerminalCredentials
) -> None:
    response = await _reverse(raw, terminal, "tx_0123456789abcdef01234567")
    assert_text_error(response, 404, spec.ErrorText.TX_NOT_FOUND)


@pytest.mark.parametrize(
    "tx_id", ["abc", "tx_", "TX_abc", "tx_a-b", "tx_%20", "tx_" + "a" * 65, "ter_abc", "tx_é"]
)
async def test_malformed_id_is_400_invalid_transaction_id(
    raw: httpx.AsyncClient, terminal: TerminalCredentials, tx_id: str
) -> None:
    response = await _reverse(raw, terminal, tx_id)
    assert_text_error(response, 400, spec.ErrorText.INVALID_TX_ID)


async def test_reversal_credits_a_suspended_wallet(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    tx_id = (await charge(wallet.qr_token, 800)).json()["id"]
    sandbox.suspend_wallet(wallet.wallet_id)
    assert (await _reverse(raw, terminal, tx_id)).status_code == 204
    info = sandbox.wallet(wallet.wallet_id)
    assert (info.balance_mnt, info.suspended) == (1_000_000, True)


async def test_reversal_has_no_time_limit(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    old = sandbox.seed_charge(terminal.username, 999, datetime.now(UTC) - timedelta(days=900))
    assert (await _reverse(raw, terminal, old)).status_code == 204


async def test_reversal_takes_no_amount(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    tx_id = (await charge(wallet.qr_token, 1000)).json()["id"]
    response = await raw.post(
        f"/v1/transactions/{tx_id}/reverse", json={"amountMNT": 1}, auth=auth(terminal)
    )
    assert response.status_code == 204
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000
