"""Every pager of the history ends on a service whose pages never end: the client's
`iter_transactions` (history, `qrpos verify`) and the reports' `iter_pages` (end of day)
raise `ListingFailed` instead of following a cursor that comes back, or more pages than
any till has. (The ledger's look-up: tests/ledger/test_review_history_paging.py.)"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from qrpos.reports.paging import iter_pages
from qrpos.service import TerminalClient
from qrpos.service.client import ListingFailed
from qrpos.service.limits import CursorTrail

ROW = {
    "id": "tx_0123456789abcdef01234567",
    "amountMNT": 500,
    "status": "COMPLETED",
    "type": "CHARGE",
    "vatReceiptID": "",
    "vatStatus": "pending",
    "terminalID": "ter_0123456789abcdef01234567",
    "createdAt": "2026-11-22T04:00:00.000000Z",
}


def _service(cursors: itertools.cycle[str]) -> httpx.MockTransport:
    """Every page holds one row and names the next cursor from `cursors`."""
    served = itertools.count()

    def handler(request: httpx.Request) -> httpx.Response:
        if next(served) > 5_000:  # the test's own bound (a pager that spins on)
            return httpx.Response(500, text="internal error\n")
        return httpx.Response(200, json={"transactions": [ROW], "nextCursor": next(cursors)})

    return httpx.MockTransport(handler)


def _client(cycle: list[str]) -> TerminalClient:
    transport = _service(itertools.cycle(cycle))
    return TerminalClient(
        "http://127.0.0.1", "term_abcdefgh", "vpt_" + "x" * 32, transport=transport
    )


LOOPS = {
    "same cursor": ["c1"],
    "two-cursor cycle": ["c1", "c2"],
}


@pytest.mark.parametrize("cycle", LOOPS.values(), ids=LOOPS.keys())
async def test_the_clients_pager_stops_on_a_cursor_that_comes_back(cycle: list[str]) -> None:
    client = _client(cycle)
    seen = 0
    with pytest.raises(ListingFailed) as failed:
        async for _tx in client.iter_transactions():
            seen += 1
    assert "loop" in str(getattr(failed.value.outcome, "reason", ""))
    assert seen <= len(cycle) + 1
    await client.aclose()


@pytest.mark.parametrize("cycle", LOOPS.values(), ids=LOOPS.keys())
async def test_the_reports_pager_stops_on_a_cursor_that_comes_back(cycle: list[str]) -> None:
    client = _client(cycle)
    now = datetime.now(UTC)
    pages = 0
    with pytest.raises(ListingFailed):
        async for _rows in iter_pages(client, now - timedelta(days=1), now):
            pages += 1
    assert pages <= len(cycle) + 1
    await client.aclose()


def test_a_trail_of_new_cursors_ends_at_its_page_bound() -> None:
    trail = CursorTrail(max_pages=3)
    assert [trail.follow(c) for c in ("a", "b", "c")] == [None, None, None]
    assert "do not end" in (trail.follow("d") or "")
    again = CursorTrail()
    assert again.follow("a") is None and "loop" in (again.follow("a") or "")
