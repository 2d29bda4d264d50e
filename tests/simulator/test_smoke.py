"""The shared fixtures work: a charge through each transport lands in the sandbox."""

from __future__ import annotations

import uuid

from qrpos.service import Approved, TerminalClient, Unresolved
from qrpos.simulator import Sandbox, WalletInfo


async def test_charge_in_process_debits_the_wallet(
    asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    outcome = await asgi_client.charge(wallet.qr_token, 1500, str(uuid.uuid4()))
    assert isinstance(outcome, Approved)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 1500


async def test_charge_over_loopback_debits_the_wallet(
    http_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    outcome = await http_client.charge(wallet.qr_token, 700, str(uuid.uuid4()))
    assert isinstance(outcome, Approved)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 700


async def test_dropped_connection_is_unresolved_over_both_transports(
    asgi_client: TerminalClient, http_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    for client in (asgi_client, http_client):
        token = sandbox.wallet(wallet.wallet_id).qr_token
        sandbox.arm_fault("drop_after_commit")
        key = str(uuid.uuid4())
        lost = await client.charge(token, 100, key)
        assert isinstance(lost, Unresolved), lost
        assert lost.sent
        again = await client.charge(token, 100, key)
        assert isinstance(again, Approved)
    charges = [t for t in sandbox.transactions() if t.type == "CHARGE"]
    assert len(charges) == 2
