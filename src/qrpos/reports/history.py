"""This terminal's history for the owner: from the service when it answers, else from
the local cache (marked offline), a page at a time, newest first."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from msgspec import structs

from qrpos import spec
from qrpos.reports.history_cache import CacheError, HistoryCache
from qrpos.reports.localday import day_window, in_window, to_local
from qrpos.said import Said, say
from qrpos.service.models import Transaction, format_rfc3339
from qrpos.service.outcomes import CredentialsRejected, Page, RateLimited, Unresolved

if TYPE_CHECKING:
    from qrpos.service import TerminalClient

log = logging.getLogger("qrpos.reports.history")

PAGE_SIZE = 50
#: how far back "all days" reaches (the service's own default is only 30 days)
ALL_DAYS = timedelta(days=366)


@dataclass(frozen=True)
class HistoryCursor:
    """Where the next page starts: the service's opaque cursor (kept in memory only)
    and the key of the last row shown, for continuing from the cache when offline."""

    service: str | None
    last_key: tuple[str, str] | None


@dataclass(frozen=True)
class HistoryPage:
    """One page for display. `offline` pages come from the cache (as of `synced_at`)."""

    transactions: tuple[Transaction, ...]
    next: HistoryCursor | None
    offline: bool = False
    synced_at: datetime | None = None
    #: why the service could not be asked (for the screen), when offline
    #: why the page is offline, in words for any language (`qrpos.said`)
    reason: Said | None = None
    credentials_rejected: bool = False


def _key(tx: Transaction) -> tuple[str, str]:
    return (format_rfc3339(tx.created_at), tx.id)


#: which of these rows a landed refund of this kiosk's outbox gave back
#: (`qrpos.ledger.refunded_here`)
RefundedHere = Callable[[Sequence[str]], set[str]]


def with_refunds_here(
    rows: Iterable[Transaction], refunded_here: RefundedHere | None
) -> tuple[Transaction, ...]:
    """Rows of a stale copy of the history (the cache, read offline) as the service has
    them now: a sale this kiosk refunded since, the service confirming it, is REVERSED
    (its copy would otherwise show it paid and offer it to be printed or refunded)."""
    rows = tuple(rows)
    charges = [tx.id for tx in rows if tx.is_charge and tx.status is spec.TxStatus.COMPLETED]
    if refunded_here is None or not charges:
        return rows
    back = refunded_here(charges)
    return tuple(
        structs.replace(tx, status=spec.TxStatus.REVERSED) if tx.id in back else tx for tx in rows
    )


class HistoryFeed:
    """Pages of history for the screen and `qrpos history`; refreshes the cache."""

    def __init__(
        self,
        client: TerminalClient | None,
        cache: HistoryCache | None,
        clock: Callable[[], datetime],
        refunded_here: RefundedHere | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.clock = clock
        #: the outbox's landed refunds, laid over the cache's rows when offline
        self.refunded_here = refunded_here

    async def page(
        self,
        *,
        day: date | None = None,
        cursor: HistoryCursor | None = None,
        limit: int = PAGE_SIZE,
        from_utc: datetime | None = None,
        to_utc: datetime | None = None,
    ) -> HistoryPage:
        """The next page (the first when `cursor` is None), optionally of one local day
        (or of an explicit UTC window)."""
        if day is not None:
            from_utc, to_utc = day_window(day)
        elif from_utc is None:
            from_utc = self.clock() - ALL_DAYS
        reason = say("history.not_paired", "not paired")
        rejected = False
        if self.client is not None and (cursor is None or cursor.service):
            outcome = await self.client.list_page(
                from_=from_utc,
                to=to_utc,
                limit=limit,
                cursor=cursor.service if cursor else None,
            )
            if isinstance(outcome, Page):
                rows = outcome.page.transactions
                self._remember(rows)
                if to_utc is not None and from_utc is not None:
                    # the service's `to` may be inclusive; a local day is half-open
                    rows = tuple(t for t in rows if in_window(t.created_at, from_utc, to_utc))
                nxt = None
                if outcome.page.next_cursor:
                    last = _key(rows[-1]) if rows else (cursor.last_key if cursor else None)
                    nxt = HistoryCursor(service=outcome.page.next_cursor, last_key=last)
                return HistoryPage(transactions=rows, next=nxt, synced_at=self.clock())
            rejected = isinstance(outcome, CredentialsRejected)
            reason = _reason(outcome)
        return self._offline_page(from_utc, to_utc, cursor, limit, reason, rejected)

    def _remember(self, rows: tuple[Transaction, ...]) -> None:
        if self.cache is None or not rows:
            return
        try:
            self.cache.store(rows, synced_at=self.clock())
        except CacheError as exc:
            log.warning("history cache not updated: %s", exc)

    def _offline_page(
        self,
        from_utc: datetime | None,
        to_utc: datetime | None,
        cursor: HistoryCursor | None,
        limit: int,
        reason: Said,
        rejected: bool,
    ) -> HistoryPage:
        if self.cache is None:
            return HistoryPage((), None, True, None, reason, rejected)
        before = cursor.last_key if cursor else None
        cached = self.cache.page(from_utc=from_utc, to_utc=to_utc, before=before, limit=limit)
        nxt = HistoryCursor(service=None, last_key=cached.before) if cached.before else None
        return HistoryPage(
            transactions=with_refunds_here(cached.transactions, self.refunded_here),
            next=nxt,
            offline=True,
            synced_at=self.cache.synced_at(),
            reason=reason,
            credentials_rejected=rejected,
        )


def _reason(outcome: object) -> Said:
    if isinstance(outcome, CredentialsRejected):
        return say("history.credentials_rejected", "credentials rejected")
    if isinstance(outcome, RateLimited):
        return say("history.busy", "service busy (429)")
    if isinstance(outcome, Unresolved):
        return outcome.why
    message = getattr(outcome, "message", None) or ""
    return say("history.refused", "the service refused: {message}", message=str(message))


def matches(tx: Transaction, query: str) -> bool:
    """Whether `tx` is what an owner looking for `query` means, as an owner says it: an
    amount (``4500``, ``4,500``, ``4 500 ₮``), a local time or its start (``11:3``,
    ``11:35``), or the last characters of the id (``9e2``, case does not matter). An
    empty query matches every row."""
    text = query.strip().lower()
    if not text:
        return True
    if ":" in text:
        return f"{to_local(tx.created_at):%H:%M:%S}".startswith(text)
    amount = text.removesuffix("₮").replace(",", "").replace(" ", "").replace("\u00a0", "")
    if amount.isdigit() and int(amount) == tx.amount_mnt:
        return True
    return tx.id.lower().endswith(text)
