"""Strict parsing (MalformedResponse), HTTPS only, and no password anywhere."""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from qrpos.service import (
    Approved,
    Declined,
    InsecureBaseURL,
    MalformedResponse,
    Page,
    RateLimited,
    TerminalClient,
    Unresolved,
    check_base_url,
    parse_page,
    parse_transaction,
)
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

GOOD_TX: dict[str, Any] = {
    "id": "tx_abc123",
    "amountMNT": 500,
    "status": "COMPLETED",
    "type": "CHARGE",
    "vatReceiptID": "",
    "vatStatus": "pending",
    "terminalID": "ter_x",
    "createdAt": "2025-03-01T04:00:00.123456Z",
}


def _canned(status: int, body: bytes, content_type: str = "application/json") -> TerminalClient:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"content-type": content_type})

    return TerminalClient(
        "https://service.example",
        "term_abcdefgh",
        "vpt_" + "s" * 32,
        transport=httpx.MockTransport(answer),
    )


def test_extra_fields_are_tolerated_and_optional_ones_may_be_absent() -> None:
    tx = parse_transaction(GOOD_TX | {"newField": [1, 2]})
    assert tx.amount_mnt == 500
    credit = {k: v for k, v in GOOD_TX.items() if k not in ("vatStatus", "terminalID")}
    parsed = parse_transaction(credit | {"type": "CREDIT"})
    assert parsed.vat_status is None and parsed.terminal_id is None


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"id": None}, "id"),
        ({"amountMNT": "500"}, "amountMNT"),
        ({"amountMNT": True}, "amountMNT"),
        ({"amountMNT": 0}, "amountMNT"),
        ({"status": "DONE"}, "status"),
        ({"type": "REFUND"}, "type"),
        ({"vatStatus": None}, "vatStatus"),
        ({"createdAt": "yesterday"}, "createdAt"),
        ({"createdAt": "2025-03-01T04:00:00"}, "createdAt"),
        ({"id": "abc"}, "id"),
    ],
)
def test_missing_or_mistyped_fields_raise_malformed_response(
    change: dict[str, Any], needle: str
) -> None:
    obj = {k: v for k, v in (GOOD_TX | change).items() if v is not None or k == "vatStatus"}
    with pytest.raises(MalformedResponse, match=needle):
        parse_transaction(obj)


@pytest.mark.parametrize(
    "page",
    [[], {"transactions": []}, {"nextCursor": ""}, {"transactions": [1], "nextCursor": ""}],
)
def test_malformed_pages_raise(page: object) -> None:
    with pytest.raises(MalformedResponse):
        parse_page(page)


@pytest.mark.parametrize(
    "body",
    [b"not json", b"{}", json.dumps(GOOD_TX | {"amountMNT": -1}).encode(), b"\xff\xfe"],
)
async def test_garbled_success_body_is_unresolved_never_a_crash(body: bytes) -> None:
    async with _canned(201, body) as client:
        outcome = await client.charge("vqr_x", 5, "k")
    assert isinstance(outcome, Unresolved) and "garbled" in outcome.reason
    async with _canned(200, body) as client:
        assert isinstance(await client.list_page(), Unresolved)


async def test_any_decline_code_is_accepted() -> None:
    async with _canned(422, b'{"code":"velocity_check_failed","extra":1}') as client:
        outcome = await client.charge("vqr_x", 5, "k")
    assert isinstance(outcome, Declined) and outcome.code == "velocity_check_failed"


async def test_approved_tolerates_new_fields_and_keeps_the_contract_fields_as_sent() -> None:
    sent = GOOD_TX | {"createdAt": "2025-03-01T04:00:00.123456789Z"}
    async with _canned(201, json.dumps(sent | {"extra": 1}).encode()) as client:
        outcome = await client.charge("vqr_x", 500, "k")
    # a field the contract does not know is ignored (not kept); the rest is as sent,
    # createdAt to the nanosecond
    assert isinstance(outcome, Approved) and outcome.transaction.to_json() == sent


@pytest.mark.parametrize(
    ("header", "expected"),
    [("3", 3.0), ("0.5", 0.5), ("-4", 0.0), ("inf", None), ("nan", None), ("soon", None)],
)
async def test_any_retry_after_is_read_safely(header: str, expected: float | None) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            429, json={"message": "Too Many Requests"}, headers={"Retry-After": header}
        )

    async with TerminalClient(
        "https://s.example",
        "term_abcdefgh",
        "vpt_" + "s" * 32,
        transport=httpx.MockTransport(answer),
    ) as client:
        outcome = await client.charge("vqr_x", 5, "k")
    assert isinstance(outcome, RateLimited) and outcome.retry_after_s == expected


async def test_retry_after_as_an_http_date() -> None:
    when = formatdate(time.time() + 120, usegmt=True)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": when})

    async with TerminalClient(
        "https://s.example",
        "term_abcdefgh",
        "vpt_" + "s" * 32,
        transport=httpx.MockTransport(answer),
    ) as client:
        outcome = await client.list_page()
    assert isinstance(outcome, RateLimited)
    assert outcome.retry_after_s is not None and 100 < outcome.retry_after_s <= 121


@pytest.mark.parametrize(
    "url", ["http://example.com", "http://10.0.0.5:8080", "http://192.168.1.1", "ftp://x"]
)
def test_plain_http_to_a_non_loopback_host_is_refused_clearly(url: str) -> None:
    with pytest.raises(InsecureBaseURL, match=r"(?i)https"):
        TerminalClient(url, "term_abcdefgh", "vpt_" + "p" * 32)


@pytest.mark.parametrize(
    "url",
    ["https://service.example", "http://127.0.0.1:8099", "http://localhost", "http://[::1]:9"],
)
def test_https_and_loopback_http_are_allowed(url: str) -> None:
    assert check_base_url(url) == url


def test_refusal_names_the_fix() -> None:
    with pytest.raises(InsecureBaseURL) as caught:
        check_base_url("http://pos.example.mn")
    assert "HTTPS" in str(caught.value) and "pos.example.mn" in str(caught.value)


async def test_password_never_reaches_logs_reprs_or_outcomes(
    caplog: pytest.LogCaptureFixture,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = [
        terminal.password,
        base64.b64encode(f"{terminal.username}:{terminal.password}".encode()).decode(),
    ]
    texts: list[str] = []
    async with TerminalClient(live_url, terminal.username, terminal.password) as client:
        texts.append(repr(client))
        texts.append(repr(await client.charge(wallet.qr_token, 10, str(uuid.uuid4()))))
        sandbox.arm_fault("drop_after_commit")
        texts.append(repr(await client.charge(wallet.qr_token, 10, str(uuid.uuid4()))))
        sandbox.arm_fault("error_after_commit")
        texts.append(repr(await client.list_page()))
        outcome = await client.list_page(limit=1)
        assert isinstance(outcome, Page)
        texts.append(repr(outcome))
        sandbox.rotate_password(terminal.username)
        texts.append(repr(await client.verify_credentials()))
    async with TerminalClient("http://127.0.0.1:9", terminal.username, terminal.password) as dead:
        texts.append(repr(await dead.charge(wallet.qr_token, 1, "k")))
    with pytest.raises(InsecureBaseURL) as refused:
        TerminalClient("http://example.com", terminal.username, terminal.password)
    texts.append(str(refused.value))
    everything = caplog.text + "\n".join(texts)
    assert terminal.username in caplog.text  # logs do say who
    for secret in secrets:
        assert secret not in everything
    # full tokens do not reach the log either, only their last 4 characters
    assert wallet.qr_token not in caplog.text


@pytest.mark.parametrize("bad", ["", "k" * 256, "ключ", "a\nb"])
async def test_an_unsendable_idempotency_key_is_a_programming_error(bad: str) -> None:
    async with _canned(201, b"{}") as client:
        with pytest.raises(ValueError, match="Idempotency-Key"):
            await client.charge("vqr_x", 5, bad)
