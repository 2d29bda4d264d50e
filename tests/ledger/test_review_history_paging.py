"""A history listing that does not add up is never read as proof or as absence.

A hostile or broken service pages the history: a cursor that loops, the same rows on two
pages, one id listed twice with different contents. The look-up must end (it used to spin
forever without yielding, freezing the kiosk with the outbox locked), a repeated row is one
charge (it used to be "another install" plus a review), and a row that contradicts itself
proves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.ledger.lookup import MAX_PAGES
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport

#: rewrites one listed page: (the real first page's body, the cursor asked for) -> body
Pager = Callable[[dict[str, Any], str | None], dict[str, Any]]


class Paging(httpx.AsyncBaseTransport):
    """The real sandbox, but every history page is the first one, rewritten by `pager`."""

    def __init__(self, inner: httpx.AsyncBaseTransport, pager: Pager) -> None:
        self.inner, self.pager = inner, pager
        #: pages of the current look-up, and the most any one look-up read
        self.run, self.longest = 0, 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "GET" or not request.url.path.endswith("/transactions"):
            return await self.inner.handle_async_request(request)
        params = dict(request.url.params)
        cursor = params.pop("cursor", None)
        self.run = self.run + 1 if cursor else 1
        self.longest = max(self.longest, self.run)
        if self.run > 5 * MAX_PAGES:  # a bound for the test itself (the old code spun on)
            return httpx.Response(500, text="internal error\n")
        first = httpx.Request("GET", request.url.copy_with(params=params), headers=request.headers)
        response = await self.inner.handle_async_request(first)
        body = self.pager(json.loads(await response.aread()), cursor)
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        return httpx.Response(200, headers=headers, json=body)


async def _sale_with_lost_reply(
    ledger: Ledger, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials, pager: Pager
) -> tuple[Any, str, Paging]:
    transport = Paging(asgi_transport(sim_app), pager)
    client = TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    )
    try:
        desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing(max_sends=2))
        wallet = sandbox.create_wallet(10_000)
        sandbox.arm_fault("drop_after_commit", count=3, operation="charge")
        result = await desk.charge(500, wallet.qr_token, deadline_s=1.0)
        assert desk.listing.foreign_activity() is None
    finally:
        await client.aclose()
    [tx] = [t.id for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]
    return result, tx, transport


@pytest.mark.parametrize(
    "loop",
    [lambda cursor: "again", lambda cursor: "b" if cursor == "a" else "a"],
    ids=["same-cursor", "two-cursor-cycle"],
)
async def test_a_history_cursor_that_loops_ends_the_look_up_without_a_verdict(
    ledger: Ledger,
    sim_app: Any,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    loop: Callable[[str | None], str],
) -> None:
    def pager(body: dict[str, Any], cursor: str | None) -> dict[str, Any]:
        return {**body, "transactions": [], "nextCursor": loop(cursor)}

    result, _, transport = await _sale_with_lost_reply(ledger, sim_app, sandbox, terminal, pager)
    # pages that never end are no listing: neither proof nor absence, the sale stays open
    assert result.state is IntentState.UNRESOLVED and result.charged is None
    assert transport.longest <= MAX_PAGES + 1


async def test_rows_repeated_on_the_next_page_are_one_charge_not_another_install(
    ledger: Ledger, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    def pager(body: dict[str, Any], cursor: str | None) -> dict[str, Any]:
        return {**body, "nextCursor": "" if cursor else "next"}  # page 2 repeats page 1

    result, tx, _ = await _sale_with_lost_reply(ledger, sim_app, sandbox, terminal, pager)
    # found, not taken for another install's (the key's replay decides, issue 47)
    assert result.state in (IntentState.CHARGED_PER_HISTORY, IntentState.APPROVED)
    assert result.transaction is not None and result.transaction.id == tx


async def test_a_row_listed_twice_with_different_contents_proves_nothing(
    ledger: Ledger, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    def pager(body: dict[str, Any], cursor: str | None) -> dict[str, Any]:
        if not cursor:
            return {**body, "nextCursor": "next"}
        rows = [{**row, "status": spec.TxStatus.REVERSED.value} for row in body["transactions"]]
        return {"transactions": rows, "nextCursor": ""}

    result, tx, _ = await _sale_with_lost_reply(ledger, sim_app, sandbox, terminal, pager)
    assert result.state is IntentState.UNRESOLVED and result.charged is None
    assert sandbox.transaction(tx).status is spec.TxStatus.COMPLETED
