"""Asynchronous VAT receipts, the /_sim admin API, SQLite persistence, thread safety."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from qrpos import spec
from qrpos.simulator import Sandbox, SimulatorOptions, TerminalCredentials, WalletInfo

from .conftest import Charge, FakeClock, auth


async def _row(raw: httpx.AsyncClient, creds: TerminalCredentials) -> dict[str, str]:
    row: dict[str, str] = (await raw.get(spec.LIST_PATH, auth=auth(creds))).json()["transactions"][
        0
    ]
    return row


async def test_receipt_is_issued_after_the_delay_and_voided_after_reversal_keeping_its_number(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    clock: FakeClock,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    sandbox.configure(vat_issue_delay_s=5, vat_void_delay_s=60)
    tx_id = (await charge(wallet.qr_token, 100)).json()["id"]
    clock.advance(4.9)
    assert (await _row(raw, terminal))["vatStatus"] == "pending"
    clock.advance(0.2)
    issued = await _row(raw, terminal)
    assert issued["vatStatus"] == "issued" and len(issued["vatReceiptID"]) == 33
    await raw.post(f"/v1/transactions/{tx_id}/reverse", auth=auth(terminal))
    assert (await _row(raw, terminal))["vatStatus"] == "issued"
    clock.advance(61)
    voided = await _row(raw, terminal)
    assert voided["vatStatus"] == "voided"
    assert voided["vatReceiptID"] == issued["vatReceiptID"]


@pytest.mark.parametrize(
    ("mode", "reverse_status", "final"),
    [
        ("issue_then_void", 204, ("voided", True)),
        ("void_without_number", 204, ("voided", False)),
        ("error_until_issued", 500, ("issued", True)),
    ],
)
async def test_reversal_of_a_pending_receipt_follows_the_option(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
    mode: str,
    reverse_status: int,
    final: tuple[str, bool],
) -> None:
    sandbox.configure(reverse_pending_receipt=mode)
    tx_id = (await charge(wallet.qr_token, 100)).json()["id"]
    response = await raw.post(f"/v1/transactions/{tx_id}/reverse", auth=auth(terminal))
    assert response.status_code == reverse_status
    settled = await raw.post("/_sim/vat/settle")
    assert settled.status_code == 200
    row = await _row(raw, terminal)
    assert (row["vatStatus"], bool(row["vatReceiptID"])) == final
    if mode == "error_until_issued":  # nothing was applied; once issued it reverses
        assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 100
        response = await raw.post(f"/v1/transactions/{tx_id}/reverse", auth=auth(terminal))
        assert response.status_code == 204


async def test_admin_api_as_design_lists_it(raw: httpx.AsyncClient, sandbox: Sandbox) -> None:
    made = await raw.post("/_sim/terminals", json={"merchant": "m1"})
    assert made.status_code == 201
    creds = made.json()
    assert set(creds) == {"username", "password", "terminalID", "merchant"}
    assert creds["merchant"] == "m1" and spec.USERNAME_RE.match(creds["username"])
    login = (creds["username"], creds["password"])
    assert (await raw.get(spec.LIST_PATH, params={"limit": "1"}, auth=login)).status_code == 200

    rotated = await raw.post(f"/_sim/terminals/{creds['username']}/rotate")
    assert rotated.status_code == 200 and set(rotated.json()) == {"password"}
    assert (await raw.get(spec.LIST_PATH, auth=login)).status_code == 401
    login = (creds["username"], rotated.json()["password"])

    wallet = await raw.post("/_sim/wallets", json={"balanceMNT": 5000})
    assert wallet.status_code == 201 and set(wallet.json()) == {"walletID", "qrToken"}
    wid, token = wallet.json()["walletID"], wallet.json()["qrToken"]
    charged = await raw.post(
        spec.CHARGE_PATH, json={"qrToken": token, "amountMNT": 1000}, auth=login
    )
    assert charged.status_code == 201
    state = (await raw.get(f"/_sim/wallets/{wid}")).json()
    assert state == {
        "walletID": wid,
        "balanceMNT": 4000,
        "qrToken": sandbox.wallet(wid).qr_token,
        "suspended": False,
    }
    assert state["qrToken"] != token

    credit = await raw.post(f"/_sim/wallets/{wid}/credit", json={"amountMNT": 600})
    assert credit.status_code == 201 and credit.json()["type"] == "CREDIT"
    assert "vatStatus" not in credit.json() and "terminalID" not in credit.json()
    assert (await raw.post(f"/_sim/wallets/{wid}/suspend")).status_code == 204
    assert (await raw.get(f"/_sim/wallets/{wid}")).json()["suspended"] is True
    assert (await raw.post("/_sim/vat/settle")).json() == {"issued": 1, "voided": 0}

    faults = await raw.post("/_sim/faults", json={"kind": "error_before_commit", "count": 2})
    assert faults.status_code == 201 and faults.json()["armed"][0]["count"] == 2
    assert (await raw.get(spec.LIST_PATH, auth=login)).status_code == 500
    assert (await raw.delete("/_sim/faults")).status_code == 204
    assert (await raw.get(spec.LIST_PATH, auth=login)).status_code == 200

    assert (await raw.post(f"/_sim/terminals/{creds['username']}/suspend")).status_code == 204
    assert (await raw.get(spec.LIST_PATH, auth=login)).status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/_sim/terminals/term_nobody00/rotate", None, 404),
        ("GET", "/_sim/wallets/wal_nope", None, 404),
        ("POST", "/_sim/wallets", {"balanceMNT": -5}, 400),
        ("POST", "/_sim/wallets", {}, 400),
        ("POST", "/_sim/faults", {"kind": "meteor"}, 400),
        ("POST", "/_sim/faults", {"kind": "delay"}, 400),
        ("POST", "/_sim/terminals", [1], 400),
    ],
)
async def test_admin_api_refuses_bad_input_plainly(
    raw: httpx.AsyncClient, method: str, path: str, body: object, status: int
) -> None:
    response = await raw.request(method, path, json=body)
    assert response.status_code == status
    assert response.headers["content-type"] == spec.TEXT_CONTENT_TYPE


def test_state_survives_a_restart_with_a_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "sandbox.db"
    first = Sandbox(SimulatorOptions(db_path=db))
    creds = first.create_terminal("m1")
    wallet = first.create_wallet(10_000)
    body = f'{{"qrToken":"{wallet.qr_token}","amountMNT":700}}'.encode()
    terminal = first.authenticate_basic(creds.username, creds.password)
    assert terminal is not None
    original = first.charge(terminal, body, "key-1")
    assert original.status == 201
    first.close()

    again = Sandbox(SimulatorOptions(db_path=db))
    terminal = again.authenticate_basic(creds.username, creds.password)
    assert terminal is not None
    assert again.wallet(wallet.wallet_id).balance_mnt == 9_300
    assert again.charge(terminal, body, "key-1").json == original.json  # key remembered
    assert again.charge(terminal, body, "key-2").status == 409  # token still spent
    page = again.list_transactions(terminal, {})
    assert [t["id"] for t in page.json["transactions"]] == [original.json["id"]]
    again.close()


async def test_admin_calls_from_another_thread_while_serving(
    http_client: object, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    from qrpos.service import Approved, TerminalClient

    assert isinstance(http_client, TerminalClient)
    wallets = [sandbox.create_wallet(10_000) for _ in range(30)]
    start = datetime.now(UTC) - timedelta(days=2)

    def seed() -> None:
        for i in range(2000):
            sandbox.seed_charge(terminal.username, 1, start + timedelta(seconds=i))

    seeder = threading.Thread(target=seed)
    seeder.start()
    import asyncio

    outcomes = await asyncio.gather(
        *(http_client.charge(w.qr_token, 10, f"k{i}") for i, w in enumerate(wallets))
    )
    seeder.join()
    assert all(isinstance(o, Approved) for o in outcomes)
    ids = [tx.id async for tx in http_client.iter_transactions(limit=1000)]
    assert len(ids) == len(set(ids)) == 2030
