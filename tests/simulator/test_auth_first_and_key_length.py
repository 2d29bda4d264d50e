"""Every `/v1` request is authenticated before anything else, and the Idempotency-Key's
limit counts characters, not bytes."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrpos import spec
from qrpos.simulator import Sandbox, SimulatorOptions, TerminalCredentials, WalletInfo, create_app
from qrpos.simulator.testing import asgi_transport

from .conftest import ASGI_BASE_URL, assert_text_error, auth, fresh_token

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]
V1_PATHS = [
    "/v1",
    "/v1/",
    "/v1/transactions/",
    "/v1/transactions//",
    "/v1/transactions/charge-by-token/",
    "/v1/transactions/tx_abc/reverse/",
    "/v1/transactions/tx_abc/reverse",
    "/v1/transactions/not-an-id/reverse",
    "/v1/transactions/a/b/c",
    "/v1/nope",
    "/v1/transactions?limit=abc",
    "/v1/transactions/?from=yesterday",
]
BAD_AUTH: list[dict[str, str]] = [
    {},
    {"Authorization": "Basic " + base64.b64encode(b"term_nobody00:vpt_x").decode()},
    {"Authorization": "Basic not-base64!"},
    {"Authorization": "Bearer vpt_x"},
]


def _assert_401(response: httpx.Response, method: str) -> None:
    assert response.status_code == 401, (response.status_code, response.headers)
    assert response.headers["www-authenticate"] == spec.WWW_AUTHENTICATE
    assert response.headers["content-type"] == spec.TEXT_CONTENT_TYPE
    if method != "HEAD":
        assert response.content == (spec.ErrorText.UNAUTHORIZED + "\n").encode()


@pytest.mark.parametrize("path", V1_PATHS)
async def test_every_v1_path_and_method_answers_401_first(
    raw: httpx.AsyncClient, path: str
) -> None:
    for method in METHODS:
        for headers in BAD_AUTH:
            response = await raw.request(method, path, headers=headers, content=b"{")
            _assert_401(response, method)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(METHODS),
    suffix=st.tuples(
        st.sampled_from(["", "transactions", "transactions/charge-by-token", "transactions/tx_a"]),
        st.text(
            st.characters(codec="ascii", exclude_characters="#?%\\", exclude_categories=["Cc"]),
            max_size=20,
        ),
        st.sampled_from(["", "/", "/reverse", "/reverse/"]),
    ).map("".join),
)
async def test_any_v1_suffix_without_credentials_is_401(method: str, suffix: str) -> None:
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    app = create_app(sandbox)
    async with httpx.AsyncClient(base_url=ASGI_BASE_URL, transport=asgi_transport(app)) as client:
        response = await client.request(method, "/v1/" + suffix)
    _assert_401(response, method)


async def test_a_trailing_slash_is_a_404_once_authenticated_never_a_redirect(
    raw: httpx.AsyncClient, terminal: TerminalCredentials
) -> None:
    response = await raw.get(spec.LIST_PATH + "/", auth=auth(terminal))
    assert_text_error(response, 404, "not found")
    assert "location" not in response.headers


async def test_probes_stay_unauthenticated(raw: httpx.AsyncClient) -> None:
    for path in (spec.HEALTH_PATH, spec.READY_PATH):
        assert (await raw.get(path)).status_code == 200


# --- Idempotency-Key: at most 255 characters ---------------------------------------------


async def _charge_with_key(
    raw: httpx.AsyncClient, terminal: TerminalCredentials, token: str, key: bytes
) -> httpx.Response:
    return await raw.post(
        spec.CHARGE_PATH,
        json={spec.FIELD_QR_TOKEN: token, spec.FIELD_AMOUNT: 10},
        headers={spec.IDEMPOTENCY_HEADER: key},  # type: ignore[arg-type]  # raw bytes, as they are
        auth=auth(terminal),
    )


@pytest.mark.parametrize(("count", "accepted"), [(200, True), (255, True), (256, False)])
async def test_the_key_limit_counts_characters_not_bytes(
    raw: httpx.AsyncClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
    count: int,
    accepted: bool,
) -> None:
    key = ("é" * count).encode("utf-8")
    token = fresh_token(sandbox, wallet)
    first = await _charge_with_key(raw, terminal, token, key)
    if not accepted:
        assert_text_error(first, 400, spec.ErrorText.INVALID_BODY)
        return
    assert first.status_code == 201, first.text
    again = await _charge_with_key(raw, terminal, token, key)
    assert again.status_code == 201 and again.json() == first.json()


async def test_a_key_that_is_not_utf8_is_its_own_key_not_merged_with_another(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> None:
    first = await _charge_with_key(raw, terminal, fresh_token(sandbox, wallet), "é".encode())
    # b"\xe9" is "é" in latin-1: a key of its own, not a replay of the UTF-8 "é"
    other = await _charge_with_key(raw, terminal, fresh_token(sandbox, wallet), b"\xe9")
    assert first.status_code == other.status_code == 201, other.text
    assert other.json()["id"] != first.json()["id"]
    latin1 = await _charge_with_key(raw, terminal, fresh_token(sandbox, wallet), b"\xe9" * 255)
    assert latin1.status_code == 201, latin1.text
    too_long = await _charge_with_key(raw, terminal, fresh_token(sandbox, wallet), b"\xe9" * 256)
    assert_text_error(too_long, 400, spec.ErrorText.INVALID_BODY)


_KEY_CHARS = st.characters(exclude_categories=["Cc", "Cs", "Zl", "Zp"])
_NON_ASCII = st.characters(min_codepoint=0xA1, exclude_categories=["Cs", "Zl", "Zp"])
# Half of them wholly non-ASCII: 2-4 UTF-8 bytes a character, where bytes and characters part.
key_texts = (
    st.text(_KEY_CHARS, min_size=1, max_size=300)
    | st.text(
        st.characters(min_codepoint=0xA1, exclude_categories=["Cs", "Zl", "Zp"]),
        min_size=64,
        max_size=300,
    )
).filter(lambda k: k == k.strip())


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=key_texts)
async def test_any_text_key_up_to_255_characters_is_taken_and_replays(key: str) -> None:
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    terminal = sandbox.create_terminal()
    wallet = sandbox.create_wallet(1000)
    app = create_app(sandbox)
    async with httpx.AsyncClient(base_url=ASGI_BASE_URL, transport=asgi_transport(app)) as client:
        first = await _charge_with_key(client, terminal, wallet.qr_token, key.encode())
        if len(key) > spec.IDEMPOTENCY_KEY_MAX_LEN:
            assert_text_error(first, 400, spec.ErrorText.INVALID_BODY)
            return
        assert first.status_code == 201, (len(key), first.text)
        again = await _charge_with_key(client, terminal, wallet.qr_token, key.encode())
    assert again.json() == first.json()
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 990


async def test_non_utf8_and_non_ascii_keys_survive_a_restart_of_a_persistent_sandbox(
    tmp_path: Path,
) -> None:
    db = tmp_path / "sandbox.db"
    first = Sandbox(SimulatorOptions(rate_limit_enabled=False, db_path=db))
    terminal = first.create_terminal()
    wallets = [first.create_wallet(1000) for _ in range(3)]
    keys = [b"\xe9\xff", "é".encode(), "ключ-1".encode()]
    originals = []
    async with httpx.AsyncClient(
        base_url=ASGI_BASE_URL, transport=asgi_transport(create_app(first))
    ) as client:
        for wallet, key in zip(wallets, keys, strict=True):
            response = await _charge_with_key(client, terminal, wallet.qr_token, key)
            assert response.status_code == 201, response.text
            originals.append(response.json())
    first.close()
    again = Sandbox(SimulatorOptions(rate_limit_enabled=False, db_path=db))
    async with httpx.AsyncClient(
        base_url=ASGI_BASE_URL, transport=asgi_transport(create_app(again))
    ) as client:
        for wallet, key, original in zip(wallets, keys, originals, strict=True):
            replay = await _charge_with_key(client, terminal, wallet.qr_token, key)
            assert replay.json() == original
    again.close()


async def test_a_token_with_a_lone_surrogate_never_crashes_a_persistent_sandbox(
    tmp_path: Path,
) -> None:
    # JSON allows "\ud800" but it is not Unicode (I-JSON forbids it): the shared ChargeRequest
    # struct refuses such a body as `invalid request body`, before and after a restart, and
    # the file-backed store never meets a string SQLite cannot encode.
    db = tmp_path / "sandbox.db"
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False, db_path=db))
    terminal = sandbox.create_terminal()
    body = b'{"qrToken": "vqr_\\ud800", "amountMNT": 5}'
    async with httpx.AsyncClient(
        base_url=ASGI_BASE_URL, transport=asgi_transport(create_app(sandbox))
    ) as client:
        charged = await client.post(spec.CHARGE_PATH, content=body, auth=auth(terminal))
        assert_text_error(charged, 400, spec.ErrorText.INVALID_BODY)
    sandbox.close()
    again = Sandbox(SimulatorOptions(rate_limit_enabled=False, db_path=db))
    async with httpx.AsyncClient(
        base_url=ASGI_BASE_URL, transport=asgi_transport(create_app(again))
    ) as client:
        again_charged = await client.post(spec.CHARGE_PATH, content=body, auth=auth(terminal))
    assert_text_error(again_charged, 400, spec.ErrorText.INVALID_BODY)
    again.close()
