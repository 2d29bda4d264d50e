"""Paging for end of day: the next page's request is on the wire before the caller starts
its synchronous work on the current page, so the service builds it meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from qrpos.reports.paging import iter_pages
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.model import Reply, Terminal

START = datetime(2024, 5, 1, 16, tzinfo=UTC)


async def test_the_next_page_is_requested_before_a_page_is_handed_over(
    http_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    for minute in range(3):
        sandbox.seed_charge(terminal.username, 100, START + timedelta(minutes=minute))
    cursors: list[str | None] = []
    second_request = threading.Event()
    listing = sandbox.list_transactions

    def counting(who: Terminal, query: Mapping[str, str]) -> Reply:
        cursors.append(query.get("cursor"))
        if len(cursors) == 2:
            second_request.set()
        return listing(who, query)

    sandbox.list_transactions = counting  # type: ignore[method-assign, assignment]
    pages = iter_pages(http_client, START, START + timedelta(hours=1), limit=1)
    first = await anext(pages)
    # the caller now works on the page without giving the event loop a turn (as the
    # tally does): the server (its own thread) must already have the next request
    assert second_request.wait(timeout=10), "the next page was not requested in time"
    rest = [page async for page in pages]
    assert [len(p) for p in (first, *rest)] == [1, 1, 1]
    assert cursors[0] is None and all(cursors[1:]) and len(cursors) == 3
