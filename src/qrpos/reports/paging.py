"""Paging through a window of the history, a page at a time, with polite retries.

Unlike `TerminalClient.iter_transactions` (which gives up on the first bad page), this
retries the *same* page after a 429 or an unclear failure, so a streaming total never
counts a page twice. Backoff is exponential with jitter (stamina), honours Retry-After
up to `RETRY_AFTER_MAX_S` (the same `bounded_retry_after` as the ledger), and is
bounded in attempts and time; `stamina.set_testing(True)` turns the waiting off.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime

import stamina

from qrpos import spec
from qrpos.service import TerminalClient
from qrpos.service.client import ListingFailed
from qrpos.service.limits import CursorTrail, bounded_retry_after
from qrpos.service.models import Transaction
from qrpos.service.outcomes import ListOutcome, Page, RateLimited, Unresolved

#: attempts per page before the listing is given up (429s and network blips)
PAGE_ATTEMPTS = 6
#: seconds one page may spend retrying in total
PAGE_TIMEOUT_S = 120.0
#: turns of the event loop given to the next page's request before a page is handed over
SEND_TURNS = 4


class _TryPageAgain(Exception):
    def __init__(self, outcome: RateLimited | Unresolved) -> None:
        super().__init__(type(outcome).__name__)
        self.outcome = outcome


def _backoff(exc: Exception) -> bool | float:
    """stamina's hook: retry our own signal; wait what the gateway asked, within bounds."""
    if not isinstance(exc, _TryPageAgain):
        return False
    outcome = exc.outcome
    if isinstance(outcome, RateLimited) and outcome.retry_after_s:
        return bounded_retry_after(outcome.retry_after_s) or True
    return True


async def fetch_page(
    client: TerminalClient,
    *,
    from_: datetime,
    to: datetime,
    cursor: str | None,
    limit: int,
) -> Page:
    """One page, retried in place on 429 / unclear failures; `ListingFailed` otherwise."""
    last: ListOutcome | None = None
    try:
        async for attempt in stamina.retry_context(
            on=_backoff,
            attempts=PAGE_ATTEMPTS,
            timeout=PAGE_TIMEOUT_S,
            wait_initial=0.5,
            wait_max=30.0,
        ):
            with attempt:
                last = await client.list_page(from_=from_, to=to, limit=limit, cursor=cursor)
                if isinstance(last, RateLimited | Unresolved):
                    raise _TryPageAgain(last)
    except _TryPageAgain as exc:
        raise ListingFailed(exc.outcome) from None
    if not isinstance(last, Page):
        assert last is not None
        raise ListingFailed(last)
    return last


async def iter_pages(
    client: TerminalClient,
    from_: datetime,
    to: datetime,
    *,
    limit: int = spec.LIST_LIMIT_MAX,
) -> AsyncIterator[tuple[Transaction, ...]]:
    """Every page of transactions with ``from_ <= createdAt <= to`` (as the service bounds
    it), newest first. The next page is requested while the current one is consumed (the
    cursor is known as soon as a page arrives), so at most two pages are in memory and
    the caller's work overlaps the service's; the number of requests is unchanged."""
    pending = asyncio.ensure_future(
        fetch_page(client, from_=from_, to=to, cursor=None, limit=limit)
    )
    trail = CursorTrail()
    try:
        while True:
            page = await pending
            cursor = page.page.next_cursor
            if cursor and (why := trail.follow(cursor)) is not None:
                raise ListingFailed(Unresolved(reason=why, exchange=page.exchange))
            if cursor:
                pending = asyncio.ensure_future(
                    fetch_page(client, from_=from_, to=to, cursor=cursor, limit=limit)
                )
                # put the request on the wire before the caller's (synchronous) work on
                # this page: httpx takes three turns of the loop to write it
                for _ in range(SEND_TURNS):
                    await asyncio.sleep(0)
            yield page.page.transactions
            if not cursor:
                return
    finally:
        if not pending.done():
            pending.cancel()
