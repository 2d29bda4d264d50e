"""The msgspec wire models: what the sandbox encodes, the client decodes to the same value;
createdAt keeps every digit the service sent; each rule of the spec's tables is enforced
with a message naming the field; responses tolerate new fields, a charge body does not."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qrpos import spec
from qrpos.reports.localday import local_day_of
from qrpos.service import (
    ChargeRequest,
    MalformedResponse,
    Page,
    TerminalClient,
    Transaction,
    TransactionPage,
    Unresolved,
    decode_page,
    decode_transaction,
)
from qrpos.service.models import decode_charge_request, encode

ROW: dict[str, Any] = {
    "id": "tx_0a1b2c",
    "amountMNT": 12_500,
    "status": "COMPLETED",
    "type": "CHARGE",
    "vatReceiptID": "",
    "vatStatus": "pending",
    "terminalID": "ter_abc",
    "createdAt": "2024-05-01T15:59:59.999999999Z",
}

alnum = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=24)
instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
)


@st.composite
def created_at_texts(draw: st.DrawFn) -> str:
    """createdAt in any spelling RFC 3339 allows for UTC, with 0 to 9 fractional digits."""
    moment = draw(instants)
    digits = draw(st.text("0123456789", max_size=9))
    separator = draw(st.sampled_from("Tt "))
    zone = draw(st.sampled_from(["Z", "z", "+00:00", "-00:00"]))
    fraction = f".{digits}" if digits else ""
    return f"{moment:%Y-%m-%d}{separator}{moment:%H:%M:%S}{fraction}{zone}"


@st.composite
def transactions(draw: st.DrawFn) -> Transaction:
    tx_type = draw(st.sampled_from(spec.TxType))
    charge = tx_type is spec.TxType.CHARGE
    return Transaction(
        id=spec.TX_PREFIX + draw(alnum),
        amount_mnt=draw(st.integers(1, 2**63 - 1)),
        status=draw(st.sampled_from(spec.TxStatus)),
        type=tx_type,
        vat_receipt_id=draw(st.text(max_size=40)),
        vat_status=draw(st.sampled_from(spec.VatStatus)) if charge else None,
        terminal_id=draw(st.none() | alnum.map(spec.TERMINAL_PREFIX.__add__)),
        created_at_text=draw(created_at_texts()),
    )


@given(st.lists(transactions(), max_size=5), st.text(max_size=30))
def test_what_the_sandbox_encodes_the_client_decodes_to_the_same_value(
    rows: list[Transaction], cursor: str
) -> None:
    page = TransactionPage(transactions=tuple(rows), next_cursor=cursor)
    assert decode_page(encode(page)) == page
    for tx in rows:
        wire = json.loads(encode(tx))
        assert decode_transaction(encode(tx)) == tx
        # optional fields are absent, never null; createdAt is the text as written
        assert ("vatStatus" in wire) is (tx.type is spec.TxType.CHARGE)
        assert ("terminalID" in wire) is (tx.terminal_id is not None)
        assert wire["createdAt"] == tx.created_at_text
        assert tx.to_json() == wire


@given(created_at_texts())
def test_created_at_is_the_sent_instant_truncated_never_rounded(text: str) -> None:
    tx = decode_transaction(json.dumps(ROW | {"createdAt": text}))
    assert tx.created_at_text == text
    date_part, time_part = text[:10], text[11:19]
    whole = datetime.fromisoformat(f"{date_part}T{time_part}+00:00")
    fraction = text[20:].rstrip("Zz").removesuffix("+00:00").removesuffix("-00:00")
    micros = int((fraction + "000000")[:6]) if text[19:20] == "." else 0
    assert tx.created_at == whole + timedelta(microseconds=micros)


def test_a_charge_in_the_last_nanosecond_of_a_local_day_stays_in_that_day() -> None:
    tx = decode_transaction(json.dumps(ROW))
    assert tx.created_at_text == "2024-05-01T15:59:59.999999999Z"
    assert local_day_of(tx.created_at).isoformat() == "2024-05-01"


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"id": "xt_1"}, "id"),
        ({"terminalID": "term_1"}, "terminalID"),
        ({"amountMNT": 2**63}, "amountMNT"),
        ({"amountMNT": -5}, "amountMNT"),
        ({"amountMNT": 5.0}, "amountMNT"),
        ({"vatStatus": "lost"}, "vatStatus"),
        ({"type": "CREDIT"}, "vatStatus"),  # a CREDIT carrying vatStatus
        ({"createdAt": "2024-05-01T16:00:00.5+08:00"}, "createdAt"),  # not UTC
        ({"createdAt": "2024-02-30T00:00:00.0Z"}, "createdAt"),  # no such day
        ({"createdAt": "2024-05-01T24:00:00Z"}, "createdAt"),
        ({"createdAt": "2024-05-01T16:00Z"}, "createdAt"),  # no seconds
        ({"createdAt": 1714579200}, "createdAt"),
        ({"vatReceiptID": None}, "vatReceiptID"),
    ],
)
def test_each_rule_of_the_transaction_table_is_enforced_naming_the_field(
    change: dict[str, Any], needle: str
) -> None:
    body = json.dumps(ROW | change)
    with pytest.raises(MalformedResponse, match=needle):
        decode_transaction(body)
    page = json.dumps({"transactions": [ROW, ROW | change], "nextCursor": ""})
    with pytest.raises(MalformedResponse, match=rf"transactions\[1\].*{needle}|{needle}"):
        decode_page(page)


def test_a_response_may_grow_fields_a_charge_body_may_not() -> None:
    grown = {"transactions": [ROW | {"merchantRef": {"x": [1]}}], "nextCursor": "", "total": 1}
    assert decode_page(json.dumps(grown)).transactions[0].amount_mnt == 12_500
    assert decode_charge_request(b'{"qrToken":"vqr_a","amountMNT":5}') == ChargeRequest(
        qr_token="vqr_a", amount_mnt=5
    )
    with pytest.raises(msgspec.ValidationError, match="amountMnt"):
        decode_charge_request(b'{"qrToken":"vqr_a","amountMNT":5,"amountMnt":5}')


async def test_a_page_with_an_impossible_created_at_is_a_garbled_response() -> None:
    body = json.dumps(
        {"transactions": [ROW | {"createdAt": "2023-02-29T00:00:00Z"}], "nextCursor": ""}
    )

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=body.encode(), headers={"content-type": "application/json"}
        )

    async with TerminalClient(
        "https://s.example",
        "term_abcdefgh",
        "vpt_" + "s" * 32,
        transport=httpx.MockTransport(answer),
    ) as client:
        outcome = await client.list_page()
        assert isinstance(outcome, Unresolved) and "createdAt" in outcome.reason
        good = json.dumps({"transactions": [ROW], "nextCursor": ""})
        body = good
        assert isinstance(await client.list_page(), Page)
