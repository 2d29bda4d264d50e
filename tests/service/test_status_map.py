"""The status map, over every final status code a server could send with a body.

The expectations are the spec's Errors table and caller handling, written per operation
the way a reader of the spec would: branch on the status first, never on the text.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

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
    Refused,
    TerminalClient,
    TokenUsed,
    Unresolved,
)
from qrpos.service.status import (
    CHARGE_STATUS,
    LIST_STATUS,
    PROBE_STATUS,
    REVERSE_STATUS,
)

TX = {
    "id": "tx_abc123",
    "amountMNT": 500,
    "status": "COMPLETED",
    "type": "CHARGE",
    "vatReceiptID": "",
    "vatStatus": "pending",
    "createdAt": "2025-03-01T04:00:00.123456Z",
}
ALL_CODES = range(100, 600)
#: final statuses that carry a body (1xx are not final; 204 and 304 have no body)
WITH_BODY = [code for code in range(200, 600) if code not in (204, 304)]


def _client(status: int, body: object) -> TerminalClient:
    content = json.dumps(body).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=content, headers={"content-type": "x/y"})

    return TerminalClient(
        "https://service.example",
        "term_abcdefgh",
        "vpt_" + "s" * 32,
        transport=httpx.MockTransport(answer),
    )


def _common(status: int) -> type | None:
    if status == 401:
        return CredentialsRejected
    if status == 429:
        return RateLimited
    if status >= 500:
        return Unresolved
    return None


def expected_charge(status: int) -> type:
    named: dict[int, type] = {
        400: BadRequest,
        403: Forbidden,
        404: NotFound,
        409: TokenUsed,
        422: Declined,
    }
    if status == 201:
        return Approved  # the contract names 201; another 2xx may or may not have charged
    return named.get(status) or _common(status) or (Refused if status >= 400 else Unresolved)


def expected_reverse(status: int) -> type:
    named: dict[int, type] = {400: BadRequest, 403: Forbidden, 404: NotFound, 409: AlreadyReversed}
    if 200 <= status < 300:
        return Refunded
    return named.get(status) or _common(status) or (Refused if status >= 400 else Unresolved)


def expected_list(status: int) -> type:
    named: dict[int, type] = {200: Page, 400: BadRequest}
    return named.get(status) or _common(status) or (Refused if status >= 400 else Unresolved)


def expected_probe(status: int) -> type:
    named: dict[int, type] = {200: Probe, 429: RateLimited}
    return named.get(status) or (Unresolved if status >= 500 else Refused)


@pytest.mark.parametrize("status", WITH_BODY)
async def test_every_status_maps_as_the_spec_reads(status: int) -> None:
    body = TX if status < 300 else {"code": "insufficient_funds"}
    async with _client(status, body) as client:
        assert type(await client.charge("vqr_x", 500, str(uuid.uuid4()))) is expected_charge(status)
        assert type(await client.reverse("tx_abc")) is expected_reverse(status)
    page = {"transactions": [], "nextCursor": ""} if status < 300 else {"message": "m"}
    async with _client(status, page) as client:
        assert type(await client.list_page()) is expected_list(status)
        assert type(await client.health()) is expected_probe(status)


@pytest.mark.parametrize("table", [CHARGE_STATUS, REVERSE_STATUS, LIST_STATUS, PROBE_STATUS])
def test_every_table_is_well_formed(table: dict[int | str, object]) -> None:
    # a mistyped key ("5XX", 4220) would be silently ignored by the look-up
    assert "*" in table
    for key in table:
        assert key == "*" or key in ALL_CODES or key in {f"{n}xx" for n in range(1, 6)}, key
