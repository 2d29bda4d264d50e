"""Following VAT receipts: poll the history only while something is still changing.

Polling happens about every `spec.POLL_INTERVAL_S` seconds, and only while a charge of
the last day has a `pending` receipt or a reversal's receipt is not yet `voided` (the
100 rps ceiling is shared by every merchant). A 429 doubles the wait (with jitter, at
least the gateway's Retry-After) up to `MAX_BACKOFF_S`. The UI drives `poll_once` from a
timer; this module holds no timer and no Textual.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from qrpos import spec
from qrpos.reports.history_cache import HistoryCache
from qrpos.service import TerminalClient
from qrpos.service.limits import bounded_retry_after
from qrpos.service.models import Transaction
from qrpos.service.outcomes import CredentialsRejected, Page, RateLimited

log = logging.getLogger("qrpos.reports.vat")

#: charges younger than this with a pending receipt keep the poller going
RECENT = timedelta(days=1)
#: a reversal whose receipt never reads `voided` is given up after this long
FOLLOW_FOR = timedelta(days=7)
MAX_BACKOFF_S = 600.0
#: pages per poll at most: a poll must stay a handful of requests
MAX_PAGES = 20


@dataclass(frozen=True)
class PollResult:
    """What one poll found. `next_delay_s` None: nothing left to follow, stop polling."""

    changed: tuple[Transaction, ...]
    next_delay_s: float | None
    rate_limited: bool = False
    error: str | None = None


def _fingerprint(tx: Transaction | None) -> tuple[str, str, str] | None:
    if tx is None:
        return None
    vat = tx.vat_status.value if tx.vat_status else ""
    return (tx.status.value, vat, tx.vat_receipt_id)


class VatFollowUp:
    """Keeps the cache's VAT statuses current while anything is still moving."""

    def __init__(
        self,
        client: TerminalClient,
        cache: HistoryCache,
        clock: Callable[[], datetime],
        *,
        interval_s: float = spec.POLL_INTERVAL_S,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.cache = cache
        self.clock = clock
        self.interval_s = interval_s
        self._jitter = jitter
        self._busy_streak = 0

    def follow_reversal(self, tx_id: str) -> None:
        """Start following a reversed charge until its receipt reads `voided`."""
        self.cache.follow(tx_id, self.clock())

    def _prune_followed(self) -> list[tuple[str, datetime]]:
        now = self.clock()
        still = []
        for tx_id, since in self.cache.followed():
            tx = self.cache.get(tx_id)
            if (tx is not None and tx.vat_status is spec.VatStatus.VOIDED) or (
                now - since > FOLLOW_FOR
            ):
                self.cache.unfollow(tx_id)
            else:
                still.append((tx_id, since))
        return still

    def needs_polling(self) -> bool:
        """True while some receipt of the last day is pending or a reversal not voided."""
        if self._prune_followed():
            return True
        return self.cache.pending_since(self.clock() - RECENT) > 0

    def _backoff_s(self, retry_after_s: float | None) -> float:
        self._busy_streak += 1
        wait = min(MAX_BACKOFF_S, self.interval_s * 2.0**self._busy_streak)
        wait *= 0.75 + 0.5 * self._jitter()
        return max(wait, bounded_retry_after(retry_after_s, MAX_BACKOFF_S))

    async def poll_once(self) -> PollResult:
        """One round: list the last day (and any older followed charge), update the
        cache, and say what changed and when to come back."""
        if not self.needs_polling():
            self._busy_streak = 0
            return PollResult(changed=(), next_delay_s=None)
        now = self.clock()
        windows: list[tuple[datetime | None, datetime | None]] = [(now - RECENT, now)]
        for tx_id, _since in self._prune_followed():
            cached = self.cache.get(tx_id)
            if cached is None:
                windows.append((None, None))  # not seen yet: the service's default window
            elif cached.created_at < now - RECENT:
                windows.append((cached.created_at, cached.created_at + timedelta(seconds=1)))
        changed: list[Transaction] = []
        for from_, to in dict.fromkeys(windows):
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                outcome = await self.client.list_page(
                    from_=from_, to=to, limit=spec.LIST_LIMIT_MAX, cursor=cursor
                )
                if isinstance(outcome, RateLimited):
                    wait = self._backoff_s(outcome.retry_after_s)
                    log.info("VAT follow-up: service busy, next poll in %.0f s", wait)
                    return PollResult(tuple(changed), wait, rate_limited=True)
                if isinstance(outcome, CredentialsRejected):
                    return PollResult(tuple(changed), None, error="credentials rejected")
                if not isinstance(outcome, Page):
                    return PollResult(tuple(changed), self.interval_s, error=type(outcome).__name__)
                rows = outcome.page.transactions
                changed.extend(
                    tx for tx in rows if _fingerprint(self.cache.get(tx.id)) != _fingerprint(tx)
                )
                self.cache.store(rows, synced_at=self.clock())
                cursor = outcome.page.next_cursor
                if not cursor:
                    break
        self._busy_streak = 0
        delay = self.interval_s if self.needs_polling() else None
        return PollResult(changed=tuple(changed), next_delay_s=delay)
