"""List this terminal's transactions: scope, order, window, limit, cursor, every 400."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

from .conftest import Charge, assert_text_error, auth, fresh_token


async def _list(
    raw: httpx.AsyncClient, creds: TerminalCredentials, **params: str
) -> httpx.Response:
    return await raw.get(spec.LIST_PATH, params=params, auth=auth(creds))


async def _all_ids(raw: httpx.AsyncClient, creds: TerminalCredentials, **params: str) -> list[str]:
    ids: list[str] = []
    cursor = ""
    while True:
        extra = {"cursor": cursor} if cursor else {}
        page = (await _list(raw, creds, **params, **extra)).json()
        ids += [t["id"] for t in page["transactions"]]
        cursor = page["nextCursor"]
        if not cursor:
            return ids


async def test_limit_1_answers_200_with_a_page(
    raw: httpx.AsyncClient, terminal: TerminalCredentials
) -> None:
    response = await _list(raw, terminal, limit="1")
    assert response.status_code == 200
    assert response.headers["content-type"] == spec.JSON_CONTENT_TYPE
    assert response.json() == {"transactions": [], "nextCursor": ""}


async def test_only_this_terminals_charges_newest_first(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    colleague = sandbox.create_terminal("m_demo")
    mine = []
    for amount in (10, 20, 30):
        mine.append((await charge(fresh_token(sandbox, wallet), amount)).json()["id"])
        await charge(fresh_token(sandbox, wallet), amount, creds=colleague)
    sandbox.credit_wallet(wallet.wallet_id, 5000)
    sandbox.reclaim_wallet(sandbox.create_wallet(10).wallet_id)
    rows = (await _list(raw, terminal)).json()["transactions"]
    assert [r["id"] for r in rows] == mine[::-1]
    assert {r["type"] for r in rows} == {"CHARGE"}


async def test_default_window_is_the_last_30_days_from_inclusive(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    now = datetime.now(UTC)
    inside = sandbox.seed_charge(terminal.username, 1, now - timedelta(days=29, hours=23))
    sandbox.seed_charge(terminal.username, 2, now - timedelta(days=30, minutes=1))
    assert await _all_ids(raw, terminal) == [inside]
    edge = datetime(2024, 1, 1, 16, 0, tzinfo=UTC)
    at_edge = sandbox.seed_charge(terminal.username, 3, edge)
    sandbox.seed_charge(terminal.username, 4, edge - timedelta(microseconds=1))
    ids = await _all_ids(
        raw, terminal, **{"from": "2024-01-01T16:00:00Z", "to": "2024-01-02T00:00:00+08:00"}
    )
    assert ids == [at_edge]


async def test_limit_defaults_to_100_and_clamps_at_1000(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    start = datetime.now(UTC) - timedelta(days=1)
    for i in range(1001):
        sandbox.seed_charge(terminal.username, 1 + i, start + timedelta(seconds=i))
    default = (await _list(raw, terminal)).json()
    assert len(default["transactions"]) == 100 and default["nextCursor"]
    clamped = (await _list(raw, terminal, limit="100000")).json()
    assert len(clamped["transactions"]) == 1000 and clamped["nextCursor"]
    rest = (await _list(raw, terminal, limit="1000", cursor=clamped["nextCursor"])).json()
    assert [t["amountMNT"] for t in rest["transactions"]] == [1]
    assert rest["nextCursor"] == ""


async def test_keyset_cursor_stays_correct_while_new_charges_arrive(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    start = datetime.now(UTC) - timedelta(hours=1)
    seeded = [
        sandbox.seed_charge(terminal.username, 100 + i, start + timedelta(seconds=i))
        for i in range(25)
    ]
    seen: list[str] = []
    cursor = ""
    while True:
        extra = {"cursor": cursor} if cursor else {}
        page = (await _list(raw, terminal, limit="10", **extra)).json()
        seen += [t["id"] for t in page["transactions"]]
        # New charges land between pages; an offset cursor would repeat rows.
        await charge(fresh_token(sandbox, wallet), 7)
        cursor = page["nextCursor"]
        if not cursor:
            break
    assert seen == seeded[::-1]


async def test_equal_timestamps_page_without_loss_or_repeat(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    moment = datetime.now(UTC) - timedelta(minutes=5)
    seeded = {sandbox.seed_charge(terminal.username, 5, moment) for _ in range(7)}
    ids = await _all_ids(raw, terminal, limit="2")
    assert len(ids) == 7 and set(ids) == seeded


@pytest.mark.parametrize(
    ("params", "text"),
    [
        ({"from": "yesterday"}, spec.ErrorText.INVALID_FROM),
        ({"from": "2024-01-01"}, spec.ErrorText.INVALID_FROM),
        ({"from": "2024-01-01T00:00:00"}, spec.ErrorText.INVALID_FROM),
        ({"from": "2024-13-01T00:00:00Z"}, spec.ErrorText.INVALID_FROM),
        ({"to": "2024-01-01 00:00:00Z"}, spec.ErrorText.INVALID_TO),
        ({"to": "1700000000"}, spec.ErrorText.INVALID_TO),
        (
            {"from": "2024-01-02T00:00:00Z", "to": "2024-01-01T23:59:59.999Z"},
            spec.ErrorText.FROM_AFTER_TO,
        ),
        ({"limit": "0"}, spec.ErrorText.INVALID_LIMIT),
        ({"limit": "-1"}, spec.ErrorText.INVALID_LIMIT),
        ({"limit": "ten"}, spec.ErrorText.INVALID_LIMIT),
        ({"limit": "1.5"}, spec.ErrorText.INVALID_LIMIT),
    ],
)
async def test_every_400_text_of_the_list(
    raw: httpx.AsyncClient, terminal: TerminalCredentials, params: dict[str, str], text: str
) -> None:
    assert_text_error(await _list(raw, terminal, **params), 400, text)


async def test_equal_from_and_to_is_a_valid_window(
    raw: httpx.AsyncClient, terminal: TerminalCredentials
) -> None:
    moment = "2024-06-01T00:00:00.5+08:00"
    assert (await _list(raw, terminal, **{"from": moment, "to": moment})).status_code == 200


async def test_a_cursor_not_issued_by_the_service_is_400(
    raw: httpx.AsyncClient, terminal: TerminalCredentials
) -> None:
    response = await _list(raw, terminal, cursor="garbage!")
    assert response.status_code == 400
    assert response.headers["content-type"] == spec.TEXT_CONTENT_TYPE


async def test_vat_receipt_is_read_through_the_history(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    await charge(wallet.qr_token, 100)
    sandbox.settle_vat()
    row = (await _list(raw, terminal)).json()["transactions"][0]
    assert row["vatStatus"] == "issued" and row["vatReceiptID"].isdigit()
