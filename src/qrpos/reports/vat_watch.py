"""Following VAT receipts: few, batched polls, planned by a pure policy.

The 100 rps ceiling is shared by every merchant's charges, so background reads must stay
a small share of it at fleet scale (issue 14: 5,000 kiosks at a lunch peak under 10 rps).
`BatchedFollowPolicy` plans the next history poll from the receipts being followed:

- each receipt is checked when it is expected to be issued (`first_check_s` after the
  charge), then ever more rarely while it stays pending (1 min, 2, 4 … up to
  `max_spacing_s`);
- one poll covers every pending receipt of the window (one history page), and polls are at
  least `min_gap_s` apart (jittered) while the till sells (`busy_sales` charges in the
  last `busy_window_s`: a lunch peak, when every till of a chain sells at once), so a busy
  till batches many sales into one read; a quiet till polls `quiet_gap_s` apart, so its
  receipts show sooner when the shared ceiling has room;
- a 429 seen by *any* request of the kiosk (a charge too) raises the backoff level (once
  per hold: a storm of 429s is one signal): the gap doubles per level, never sooner than
  the gateway's Retry-After; a poll that goes through clears it (a storm passes; the
  kiosk must not stay an hour behind its receipts after it).

The owner who opens the history or the menu asks for a poll at once (on demand): the
policy only plans the background polls. `FixedIntervalPolicy` is the policy before issue
14 (every 30 s while anything is pending), kept for `benchmarks/fleet.py`'s "before".

The decisions are pure (numbers in, numbers out: times are seconds on any one clock), so
the kiosk (`VatFollowUp`, driven by `qrpos.tui.receipts`) and the SimPy fleet model call
the same code. This module holds no timer and no Textual.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from qrpos import spec
from qrpos.reports.history_cache import HistoryCache
from qrpos.service import TerminalClient
from qrpos.service.limits import bounded_retry_after
from qrpos.service.models import Transaction
from qrpos.service.outcomes import CredentialsRejected, Page, RateLimited

log = logging.getLogger("qrpos.reports.vat")

#: charges younger than this with a pending receipt are followed
RECENT = timedelta(days=1)
#: a reversal whose receipt never reads `voided` is given up after this long
FOLLOW_FOR = timedelta(days=7)
#: pages per poll at most: a poll must stay a handful of requests
MAX_PAGES = 20
#: a poll that falls due while a sale is under way waits this long (the sale comes first)
SALE_YIELD_S = 5.0
#: the window starts this much before the oldest receipt followed (clock skew)
WINDOW_MARGIN = timedelta(seconds=5)
#: the longest hold a gateway's Retry-After may put on the follow-up (a 3600 s one was obeyed)
RETRY_AFTER_CEILING_S = 600.0


@dataclass(frozen=True)
class Pressure:
    """The kiosk's 429 backoff: `level` doublings of the gap, no poll before `not_before`."""

    level: int = 0
    not_before: float = 0.0


class FollowPolicy(Protocol):
    """The decisions a follow-up policy makes (times in seconds on one clock)."""

    @property
    def name(self) -> str:
        """A short label (the fleet model's columns)."""
        ...

    @property
    def busy_window_s(self) -> float:
        """How far back the till's charges are counted for `recent_sales`."""
        ...

    def next_poll_at(
        self,
        followed: Sequence[float],
        last_poll_at: float | None,
        pressure: Pressure,
        u: float,
        *,
        recent_sales: int | None = None,
    ) -> float | None:
        """When to poll next, given when each followed receipt started (charge or
        reversal time); None: nothing to follow. `u` is a uniform draw in [0, 1).
        `recent_sales`: the till's charges of the last `busy_window_s` (None: unknown)."""
        ...

    def rate_limited(
        self, pressure: Pressure, now: float, retry_after_s: float | None, u: float, *, poll: bool
    ) -> Pressure:
        """A 429 was met at `now` (`poll`: by a history poll, else by a charge)."""
        ...

    def succeeded(self, pressure: Pressure) -> Pressure:
        """A poll went through."""
        ...


@dataclass(frozen=True)
class BatchedFollowPolicy:
    """The follow-up since issue 14 (module docstring). All times in seconds."""

    #: when a receipt is first expected to be issued, after its charge
    first_check_s: float = 60.0
    #: the spacing of one receipt's checks grows up to this
    max_spacing_s: float = 300.0
    #: while the till sells (its lunch peak, when every till of a chain does), background
    #: polls are at least this far apart: 7 an hour at most, batched
    min_gap_s: float = 510.0
    #: while it is quiet, this far: its receipts are seen sooner, and a quiet till's
    #: polls do not add up to much when the fleet is quiet too
    quiet_gap_s: float = 240.0
    #: the till is selling when it made at least this many charges in `busy_window_s`
    busy_sales: int = 3
    busy_window_s: float = 600.0
    #: a gap is stretched by up to this fraction, at random
    jitter: float = 0.25
    #: the highest 429 backoff level (gap × 2**level: 17 min at most)
    max_level: int = 1
    name: str = "batched"

    def scaled(self, factor: float) -> BatchedFollowPolicy:
        """The same policy on a faster clock (tests, time-compressed runs)."""
        return replace(
            self,
            first_check_s=self.first_check_s * factor,
            max_spacing_s=self.max_spacing_s * factor,
            min_gap_s=self.min_gap_s * factor,
            quiet_gap_s=self.quiet_gap_s * factor,
            busy_window_s=self.busy_window_s * factor,
        )

    def receipt_due(self, started: float, after: float | None) -> float:
        """The first check of one receipt later than `after` (its first one if None)."""
        due, spacing = started + self.first_check_s, self.first_check_s
        while after is not None and due <= after:
            due += spacing
            spacing = min(spacing * 2.0, self.max_spacing_s)
        return due

    def next_poll_at(
        self,
        followed: Sequence[float],
        last_poll_at: float | None,
        pressure: Pressure,
        u: float,
        *,
        recent_sales: int | None = None,
    ) -> float | None:
        """See `FollowPolicy.next_poll_at`. A till whose sales are unknown counts as
        selling (the longer gap)."""
        if not followed:
            return None
        due = min(self.receipt_due(s, last_poll_at) for s in followed)
        if last_poll_at is not None:
            quiet = recent_sales is not None and recent_sales < self.busy_sales
            base = self.quiet_gap_s if quiet else self.min_gap_s
            gap = base * 2.0**pressure.level * (1.0 + self.jitter * u)
            due = max(due, last_poll_at + gap)
        return max(due, pressure.not_before)

    def rate_limited(
        self, pressure: Pressure, now: float, retry_after_s: float | None, u: float, *, poll: bool
    ) -> Pressure:
        """Every 429 of the kiosk counts (the ceiling is shared): one level up, once per
        hold (a charge retrying through a storm meets many 429s: they are one signal)."""
        if now < pressure.not_before:
            hold = bounded_retry_after(retry_after_s, RETRY_AFTER_CEILING_S)
            return Pressure(pressure.level, max(pressure.not_before, now + hold))
        level = min(self.max_level, pressure.level + 1)
        hold = max(
            bounded_retry_after(retry_after_s, RETRY_AFTER_CEILING_S),
            self.first_check_s * (1.0 + self.jitter * u),
        )
        return Pressure(level, max(pressure.not_before, now + hold))

    def succeeded(self, pressure: Pressure) -> Pressure:
        """A poll went through: the storm is over for this kiosk."""
        return Pressure(0, pressure.not_before)


@dataclass(frozen=True)
class FixedIntervalPolicy:
    """The follow-up before issue 14: every `interval_s` while anything is pending; a
    429 of a poll doubles the wait (jittered, at least Retry-After) up to
    `max_backoff_s`; a charge's 429 is not looked at."""

    interval_s: float = spec.POLL_INTERVAL_S
    max_backoff_s: float = 600.0
    #: the caller counts the till's charges over this; this policy does not look at them
    busy_window_s: float = 600.0
    name: str = "fixed-30s"

    def next_poll_at(
        self,
        followed: Sequence[float],
        last_poll_at: float | None,
        pressure: Pressure,
        u: float,
        *,
        recent_sales: int | None = None,
    ) -> float | None:
        """See `FollowPolicy.next_poll_at` (it does not look at the till's sales)."""
        if not followed:
            return None
        start = last_poll_at if last_poll_at is not None else max(followed)
        return max(start + self.interval_s, pressure.not_before)

    def rate_limited(
        self, pressure: Pressure, now: float, retry_after_s: float | None, u: float, *, poll: bool
    ) -> Pressure:
        """Only the poll's own 429s back off."""
        if not poll:
            return pressure
        level = pressure.level + 1
        wait = min(self.max_backoff_s, self.interval_s * 2.0**level) * (0.75 + 0.5 * u)
        return Pressure(
            level, now + max(wait, bounded_retry_after(retry_after_s, RETRY_AFTER_CEILING_S))
        )

    def succeeded(self, pressure: Pressure) -> Pressure:
        """A clean poll resets the backoff."""
        return Pressure(0, pressure.not_before)


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
    """Keeps the cache's VAT statuses current, polling when `policy` says."""

    def __init__(
        self,
        client: TerminalClient,
        cache: HistoryCache,
        clock: Callable[[], datetime],
        *,
        interval_s: float = spec.POLL_INTERVAL_S,
        policy: FollowPolicy | None = None,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.cache = cache
        self.clock = clock
        #: `interval_s` below the spec's 30 s compresses the default policy's clock (tests)
        self.policy: FollowPolicy = policy or BatchedFollowPolicy().scaled(
            interval_s / spec.POLL_INTERVAL_S
        )
        self._jitter = jitter
        self.pressure = Pressure()
        self.last_poll_at: float | None = None
        self._rate_limits_seen = client.contact.rate_limited
        #: history requests made by polls (for tests and the fleet comparison)
        self.requests = 0

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

    def followed_starts(self) -> list[datetime]:
        """When each followed receipt started: pending charges of the last day and
        reversals not yet voided."""
        reversals = [since for _tx, since in self._prune_followed()]
        return self.cache.pending_created(self.clock() - RECENT) + reversals

    def needs_polling(self) -> bool:
        """True while some receipt of the last day is pending or a reversal not voided."""
        return bool(self.followed_starts())

    def _absorb_charge_429s(self) -> None:
        """429s the client met outside the polls (charges) raise the backoff too."""
        seen = self.client.contact.rate_limited
        if seen > self._rate_limits_seen:
            now = self.clock().timestamp()
            retry_after = self.client.contact.last_retry_after_s
            self.pressure = self.policy.rate_limited(
                self.pressure, now, retry_after, self._jitter(), poll=False
            )
        self._rate_limits_seen = seen

    def next_delay_s(self) -> float | None:
        """Seconds until the policy's next background poll (None: nothing to follow)."""
        self._absorb_charge_429s()
        starts = [s.timestamp() for s in self.followed_starts()]
        window = timedelta(seconds=self.policy.busy_window_s)
        recent = self.cache.charges_since(self.clock() - window)
        due = self.policy.next_poll_at(
            starts, self.last_poll_at, self.pressure, self._jitter(), recent_sales=recent
        )
        return None if due is None else max(0.0, due - self.clock().timestamp())

    def held_s(self) -> float:
        """Seconds a 429 still forbids polling (0: free to poll)."""
        self._absorb_charge_429s()
        return max(0.0, self.pressure.not_before - self.clock().timestamp())

    def _windows(self, now: datetime) -> list[tuple[datetime | None, datetime | None]]:
        """One window from the oldest receipt followed to now (one page in practice),
        plus the exact instant of any older reversed charge."""
        starts = self.cache.pending_created(now - RECENT)
        older: list[tuple[datetime | None, datetime | None]] = []
        for tx_id, _since in self._prune_followed():
            cached = self.cache.get(tx_id)
            if cached is None:
                older.append((None, None))  # not seen yet: the service's default window
            elif cached.created_at < now - RECENT:
                at = cached.created_at
                older.append((at, at + timedelta(seconds=1)))
            else:
                starts.append(cached.created_at)
        # open-ended: the service ends the window at its own "now" (a kiosk clock behind
        # the service's would end it before the very charges it follows, or before `from`)
        main = [(min(starts) - WINDOW_MARGIN, None)] if starts else []
        return list(dict.fromkeys(main + older))

    async def poll_once(self) -> PollResult:
        """One round: list the window of what is followed, update the cache, and say
        what changed and when the policy wants the next round."""
        self._absorb_charge_429s()
        now = self.clock()
        windows = self._windows(now)
        if not windows:
            return PollResult(changed=(), next_delay_s=None)
        changed: list[Transaction] = []
        for from_, to in windows:
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                self.requests += 1
                outcome = await self.client.list_page(
                    from_=from_, to=to, limit=spec.LIST_LIMIT_MAX, cursor=cursor
                )
                self._rate_limits_seen = self.client.contact.rate_limited
                if isinstance(outcome, RateLimited):
                    self.last_poll_at = self.clock().timestamp()
                    self.pressure = self.policy.rate_limited(
                        self.pressure,
                        self.last_poll_at,
                        outcome.retry_after_s,
                        self._jitter(),
                        poll=True,
                    )
                    wait = self.next_delay_s()
                    log.info("VAT follow-up: service busy, next poll in %.0f s", wait or 0)
                    return PollResult(tuple(changed), wait, rate_limited=True)
                if isinstance(outcome, CredentialsRejected):
                    return PollResult(tuple(changed), None, error="credentials rejected")
                if not isinstance(outcome, Page):
                    self.last_poll_at = self.clock().timestamp()
                    wait = self.next_delay_s()
                    return PollResult(tuple(changed), wait, error=type(outcome).__name__)
                rows = outcome.page.transactions
                changed.extend(
                    tx for tx in rows if _fingerprint(self.cache.get(tx.id)) != _fingerprint(tx)
                )
                self.cache.store(rows, synced_at=self.clock())
                cursor = outcome.page.next_cursor
                if not cursor:
                    break
        self.last_poll_at = self.clock().timestamp()
        self.pressure = self.policy.succeeded(self.pressure)
        return PollResult(changed=tuple(changed), next_delay_s=self.next_delay_s())
