"""Charge by token: every status-map row and numbered rule, over TCP and in-process."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

from .conftest import Charge, assert_text_error, auth, fresh_token

RFC3339_FRACTIONAL_UTC = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z$"


async def test_approved_charge_is_201_with_the_documented_projection(
    charge: Charge, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> None:
    response = await charge(wallet.qr_token, 2500, "k-1")
    assert response.status_code == 201
    assert response.headers["content-type"] == spec.JSON_CONTENT_TYPE
    body = response.json()
    # Exactly the projection: no wallet, merchant, card or employer identifiers.
    assert set(body) == {
        "id",
        "amountMNT",
        "status",
        "type",
        "vatReceiptID",
        "vatStatus",
        "terminalID",
        "createdAt",
    }
    assert spec.TX_ID_RE.match(body["id"])
    assert body["amountMNT"] == 2500
    assert (body["status"], body["type"]) == ("COMPLETED", "CHARGE")
    assert (body["vatReceiptID"], body["vatStatus"]) == ("", "pending")
    assert body["terminalID"] == terminal.terminal_id
    assert body["terminalID"].startswith(spec.TERMINAL_PREFIX)
    assert re.match(RFC3339_FRACTIONAL_UTC, body["createdAt"])
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 2500


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"",
        b"[]",
        b'"vqr_x"',
        b'{"qrToken":"vqr_x","amountMNT":100,"note":"hi"}',
        b'{"qrToken":"vqr_x","amountMnt":100}',
        b'{"qrToken":"vqr_x","amountMNT":100,"amountMnt":100}',
        b'{"qrToken":"vqr_x","amountMNT":"100"}',
        b'{"qrToken":"vqr_x","amountMNT":100.5}',
        b'{"qrToken":"vqr_x","amountMNT":1e3}',
        b'{"qrToken":"vqr_x","amountMNT":true}',
        b'{"qrToken":"vqr_x","amountMNT":null}',
        b'{"qrToken":"vqr_x","amountMNT":NaN}',
        b'{"qrToken":123,"amountMNT":100}',
        b'{"qrToken":"vqr_x"}',
        b'{"amountMNT":100}',
        b'\xff\xfe{"qrToken":"vqr_x","amountMNT":100}',
    ],
    ids=lambda b: b[:40].decode("latin-1"),
)
async def test_malformed_body_is_400_invalid_request_body(
    raw: httpx.AsyncClient, terminal: TerminalCredentials, body: bytes
) -> None:
    response = await raw.post(
        spec.CHARGE_PATH,
        content=body,
        headers={"Content-Type": "application/json"},
        auth=auth(terminal),
    )
    assert_text_error(response, 400, spec.ErrorText.INVALID_BODY)


def _padded_body(token: str, size: int) -> bytes:
    core = json.dumps({"qrToken": token, "amountMNT": 10}).encode()
    return core[:-1] + b" " * (size - len(core)) + b"}"


async def test_body_of_exactly_one_mib_is_accepted_and_one_byte_more_is_not(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> None:
    over = _padded_body(wallet.qr_token, spec.MAX_BODY_BYTES + 1)
    response = await raw.post(spec.CHARGE_PATH, content=over, auth=auth(terminal))
    assert_text_error(response, 400, spec.ErrorText.INVALID_BODY)
    exact = _padded_body(wallet.qr_token, spec.MAX_BODY_BYTES)
    assert len(exact) == spec.MAX_BODY_BYTES
    response = await raw.post(spec.CHARGE_PATH, content=exact, auth=auth(terminal))
    assert response.status_code == 201


@pytest.mark.parametrize("amount", [0, -1, -1_000_000, 1_000_001, 2**62])
async def test_amount_out_of_range_is_400_amount_must_be_positive(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo, amount: int
) -> None:
    response = await charge(wallet.qr_token, amount)
    assert_text_error(response, 400, spec.ErrorText.AMOUNT_NOT_POSITIVE)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000


@pytest.mark.parametrize("amount", [1, 1_000_000])
async def test_amount_bounds_are_inclusive(charge: Charge, sandbox: Sandbox, amount: int) -> None:
    wallet = sandbox.create_wallet(1_000_000)
    response = await charge(wallet.qr_token, amount)
    assert response.status_code == 201
    assert response.json()["amountMNT"] == amount


async def test_token_is_single_use_and_rotates(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    first = await charge(wallet.qr_token, 100, "a")
    assert first.status_code == 201
    rotated = fresh_token(sandbox, wallet)
    assert rotated != wallet.qr_token and rotated.startswith(spec.TOKEN_PREFIX)
    again = await charge(wallet.qr_token, 100, "b")
    assert_text_error(again, 409, spec.ErrorText.TOKEN_USED)
    assert (await charge(rotated, 100, "c")).status_code == 201
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 200


async def test_reused_key_replays_the_original_transaction_once(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    first = await charge(wallet.qr_token, 900, "same-key")
    sandbox.settle_vat()  # the stored transaction moves on; the replay is the original
    replay = await charge(wallet.qr_token, 900, "same-key")
    assert replay.status_code == 201
    assert replay.json() == first.json()
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 900
    assert len([t for t in sandbox.transactions() if t.type is spec.TxType.CHARGE]) == 1


async def test_keys_are_per_terminal(charge: Charge, sandbox: Sandbox, wallet: WalletInfo) -> None:
    other = sandbox.create_terminal("m_demo")
    assert (await charge(wallet.qr_token, 10, "shared")).status_code == 201
    # The other terminal's key space is its own: the spent token is reported, not replayed.
    response = await charge(wallet.qr_token, 10, "shared", creds=other)
    assert_text_error(response, 409, spec.ErrorText.TOKEN_USED)


async def test_without_the_same_key_a_retry_is_a_separate_payment(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    assert (await charge(wallet.qr_token, 300, "k1")).status_code == 201
    assert (await charge(fresh_token(sandbox, wallet), 300, "k2")).status_code == 201
    assert (await charge(fresh_token(sandbox, wallet), 300)).status_code == 201
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 900


@pytest.mark.parametrize(
    ("mode", "status"),
    [("replay", 201), ("conflict", 409), ("unprocessable", 422), ("new_charge", 201)],
)
async def test_same_key_with_a_new_body_follows_the_option(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo, mode: str, status: int
) -> None:
    sandbox.configure(same_key_new_body=mode)
    first = await charge(wallet.qr_token, 100, "k")
    second = await charge(fresh_token(sandbox, wallet), 200, "k")
    assert second.status_code == status
    balance = sandbox.wallet(wallet.wallet_id).balance_mnt
    if mode == "replay":
        assert second.json() == first.json()
    if mode == "unprocessable":
        assert isinstance(second.json()["code"], str)
    assert balance == 1_000_000 - (300 if mode == "new_charge" else 100)


async def test_forgotten_key_makes_the_retry_a_new_attempt(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    assert (await charge(wallet.qr_token, 100, "k")).status_code == 201
    sandbox.arm_fault("forget_idempotency")
    response = await charge(wallet.qr_token, 100, "k")
    assert_text_error(response, 409, spec.ErrorText.TOKEN_USED)


async def test_key_retention_option_expires_keys(
    charge: Charge, sandbox: Sandbox, clock: object, wallet: WalletInfo
) -> None:
    sandbox.configure(idempotency_retention_s=60.0)
    assert (await charge(wallet.qr_token, 100, "k")).status_code == 201
    clock.advance(30)  # type: ignore[attr-defined]
    assert (await charge(wallet.qr_token, 100, "k")).status_code == 201
    clock.advance(31)  # type: ignore[attr-defined]
    assert (await charge(wallet.qr_token, 100, "k")).status_code == 409


async def test_idempotency_key_longer_than_255_is_refused(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    assert (await charge(wallet.qr_token, 10, "k" * 255)).status_code == 201
    response = await charge(fresh_token(sandbox, wallet), 10, "k" * 256)
    assert_text_error(response, 400, spec.ErrorText.INVALID_BODY)


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ("poor", spec.DeclineCode.INSUFFICIENT_FUNDS),
        ("suspended", spec.DeclineCode.WALLET_SUSPENDED),
        ("unknown", spec.DeclineCode.TOKEN_INVALID),
    ],
)
async def test_declines_are_422_json_with_a_code_and_change_nothing(
    charge: Charge, sandbox: Sandbox, setup: str, code: str
) -> None:
    wallet = sandbox.create_wallet(100)
    token = wallet.qr_token
    if setup == "suspended":
        sandbox.suspend_wallet(wallet.wallet_id)
    if setup == "unknown":
        token = "vqr_never-issued"
    response = await charge(token, 101 if setup == "poor" else 50)
    assert response.status_code == 422
    assert response.headers["content-type"] == spec.JSON_CONTENT_TYPE
    assert response.json()["code"] == code
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 100
    assert sandbox.wallet(wallet.wallet_id).qr_token == wallet.qr_token
    if setup == "poor":  # a decline does not spend the token
        assert (await charge(token, 100)).status_code == 201


async def test_token_is_matched_exactly_never_trimmed(charge: Charge, sandbox: Sandbox) -> None:
    odd = "vqr_ a+/=ü\u00a0Z "
    wallet = sandbox.create_wallet(1000, qr_token=odd)
    assert (await charge(odd.strip(), 10)).status_code == 422
    assert (await charge(odd.upper(), 10)).status_code == 422
    response = await charge(odd, 10)
    assert response.status_code == 201
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 990


async def test_merchant_and_terminal_come_from_the_credentials(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> None:
    body = {"qrToken": wallet.qr_token, "amountMNT": 5, "terminalID": "ter_someoneelse"}
    response = await raw.post(spec.CHARGE_PATH, json=body, auth=auth(terminal))
    assert_text_error(response, 400, spec.ErrorText.INVALID_BODY)
    ok = await raw.post(
        spec.CHARGE_PATH, json={"qrToken": wallet.qr_token, "amountMNT": 5}, auth=auth(terminal)
    )
    tx = sandbox.transaction(ok.json()["id"])
    assert (tx.merchant, tx.terminal_id) == (terminal.merchant, terminal.terminal_id)
