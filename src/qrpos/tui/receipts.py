"""VAT receipts followed all day: the kiosk app drives `VatFollowUp` from a timer.

A poll is planned only while something is moving (a charge of the last day whose
receipt is pending, a reversal not yet voided): after an approved sale, after a
reversal, at start when the cache says so, and when the owner opens the menu. Polls run
in a worker, never while a sale is presented or charged (the 100 rps ceiling is shared
by every merchant: the sale comes first), and back off on 429 as `VatFollowUp` says.
What changed is posted to every screen as `ReceiptsChanged`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import App
from textual.timer import Timer
from textual.worker import Worker

from qrpos import spec
from qrpos.tui.screens.owner.messages import ReceiptsChanged, VatFollowUpPolled
from qrpos.tui.services import KioskServices

if TYPE_CHECKING:
    from qrpos.reports.history_cache import HistoryCache
    from qrpos.reports.vat_watch import PollResult, VatFollowUp
    from qrpos.service import Transaction

log = logging.getLogger("qrpos.tui.receipts")

#: a poll that finds a sale under way tries again this much later (unless the sale ends
#: first: then the policy plans it afresh, see `sale_over`)
BUSY_RETRY_S = 5.0
#: the shortest timer planned: a poll due "now" still goes through the event loop once
MIN_DELAY_S = 0.05


class ReceiptFollower:
    """Plans and runs the VAT follow-up polls of one app (see the module docstring)."""

    def __init__(
        self,
        app: App[None],
        services: Callable[[], KioskServices],
        *,
        interval_s: float = spec.POLL_INTERVAL_S,
        busy: Callable[[], bool] = lambda: False,
        busy_retry_s: float = BUSY_RETRY_S,
    ) -> None:
        self.app = app
        self._services = services
        self.interval_s = interval_s
        self._busy = busy
        self.busy_retry_s = busy_retry_s
        self._cache: HistoryCache | None = None
        self._cache_failed = False
        self._vat: VatFollowUp | None = None
        self._timer: Timer | None = None
        self._worker: Worker[None] | None = None
        #: polls made so far (for the owner's screen and for tests)
        self.polls = 0
        #: what the last poll found (None: none yet)
        self.last_poll: PollResult | None = None
        # after a 429: no poll before this (monotonic), whoever asks for one
        self._not_before = 0.0
        # set by stop(): nothing may reopen the cache or poll after the kiosk closes
        self._stopped = False
        # a poll fell due (or was cut short) during a sale: plan it again when it ends
        self._deferred = False

    @property
    def cache(self) -> HistoryCache | None:
        """The history cache in the state dir (None if it cannot be opened)."""
        if self._cache is None and not self._cache_failed and not self._stopped:
            from qrpos.reports.history_cache import CacheError, HistoryCache

            try:
                self._cache = HistoryCache.in_state_dir(self._services().config.state_dir)
            except CacheError as exc:
                self._cache_failed = True
                log.warning("history cache unavailable, receipts not followed: %s", exc)
        return self._cache

    @property
    def vat(self) -> VatFollowUp | None:
        """The follow-up over the current client (None when unpaired or no cache)."""
        from qrpos.reports.vat_watch import VatFollowUp

        services = self._services()
        client, cache = services.client, self.cache
        if client is None or cache is None or self._stopped:
            return None
        if self._vat is None or self._vat.client is not client:
            # on the service's clock as measured (receipts are stamped by it), not the Pi's
            clock = (
                services.desk.listing.service_now if services.desk is not None else services.clock
            )
            self._vat = VatFollowUp(client, cache, clock, interval_s=self.interval_s)
        return self._vat

    @property
    def planned(self) -> bool:
        """True while a poll is planned or running."""
        return self._timer is not None or (self._worker is not None and self._worker.is_running)

    def start(self) -> None:
        """At start: plan a poll only if the cache says something is still moving."""
        self._plan()

    def _plan(self) -> None:
        """Plan the background poll when the follow-up policy wants it (if anything is
        followed): few, batched polls, so a fleet fits the shared ceiling."""
        vat = self.vat
        if vat is not None and (delay := vat.next_delay_s()) is not None:
            self.schedule(delay)

    def charged(self, tx: Transaction) -> None:
        """An approved sale: its receipt is pending, so follow it."""
        cache = self.cache
        if cache is None:
            return
        from qrpos.reports.history_cache import CacheError

        try:
            cache.store([tx])
        except CacheError as exc:
            log.warning("history cache not updated: %s", exc)
            return
        if not self.planned:
            self._plan()

    def reversed(self, tx_id: str) -> None:
        """A refunded reversal: follow its receipt until voided, starting now."""
        if (vat := self.vat) is not None:
            vat.follow_reversal(tx_id)
        self.schedule(0.1)

    def schedule(self, delay_s: float) -> None:
        """Poll after `delay_s` (replacing any earlier plan), never inside a 429 backoff."""
        if self._stopped:
            return
        delay_s = max(delay_s, self._not_before - time.monotonic(), MIN_DELAY_S)
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.app.set_timer(delay_s, self._due)

    def pause_for_sale(self) -> None:
        """A charge starts: stop a poll in flight (a read, safe to drop) and come back
        after the sale."""
        if self._worker is not None and self._worker.is_running:
            self._worker.cancel()
            self._worker = None
            self._deferred = True
            self.schedule(self.busy_retry_s)

    def sale_over(self) -> None:
        """The sale ended (a result, or back to the amount): a poll it held back is
        planned afresh by the policy, not left waiting out `busy_retry_s`."""
        if self._deferred and not self._stopped:
            self._deferred = False
            self._plan()

    def stop(self) -> None:
        """No more polls; close the cache."""
        self._stopped = True
        self._vat = None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._worker is not None:
            self._worker.cancel()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def _due(self) -> None:
        self._timer = None
        if self._stopped:
            return  # a timer that fired as the kiosk closed
        if self._busy():
            self._deferred = True
            self.schedule(self.busy_retry_s)
            return
        self._deferred = False
        if (vat := self.vat) is not None and (held := vat.held_s()) > 0:
            self.schedule(held)  # a 429 (a charge's too) still holds the polls back
            return
        self._worker = self.app.run_worker(
            self._poll(), group="vat-follow-up", exclusive=True, exit_on_error=False
        )

    async def _poll(self) -> None:
        vat = self.vat
        if vat is None:
            return
        self.polls += 1
        try:
            result = await vat.poll_once()
        except Exception:
            if self._stopped:
                return  # the cache was closed under this poll as the kiosk shut down
            raise
        if self._stopped:
            return
        self.last_poll = result
        if result.error:
            log.info("VAT follow-up: %s", result.error)
        if result.rate_limited and result.next_delay_s is not None:
            self._not_before = time.monotonic() + result.next_delay_s
        if result.changed:
            for screen in self.app.screen_stack:
                screen.post_message(ReceiptsChanged(result.changed))
        # every receipt followed: the day's pending sales and the refunds not yet voided
        following = len(vat.followed_starts()) if self._cache is not None else 0
        for screen in self.app.screen_stack:
            screen.post_message(
                VatFollowUpPolled(result.next_delay_s, result.rate_limited, following)
            )
        if result.next_delay_s is not None and self._timer is None:
            self.schedule(result.next_delay_s)
