"""What the owner's screens share while the owner menu is open: the kiosk's services,
the history cache, the PIN gate and the VAT follow-up (driven all day by the app, see
`qrpos.tui.receipts`, over the same cache). Each owner screen is given this context;
none of them knows the menu."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from qrpos.present.i18n import t
from qrpos.present.owner import pin_refusal
from qrpos.reports.history import HistoryFeed, RefundedHere
from qrpos.reports.history_cache import CacheError, HistoryCache
from qrpos.reports.localday import today
from qrpos.reports.pin_gate import PinGate
from qrpos.tui.receipts import ReceiptFollower
from qrpos.tui.services import KioskServices

if TYPE_CHECKING:
    from textual.message_pump import MessagePump
    from textual.timer import Timer

    from qrpos.ledger import ChargeDesk

log = logging.getLogger("qrpos.tui.owner")


@dataclass
class OwnerContext:
    """Built once per visit to the owner menu; `close()` when the menu goes away."""

    services: KioskServices
    #: the VAT follow-up: polls on request, and follows refunded receipts
    follower: ReceiptFollower
    #: the app's cache when it follows receipts all day (not closed here); else our own
    shared_cache: HistoryCache | None = None
    cache: HistoryCache | None = field(init=False, default=None)
    pin_gate: PinGate = field(init=False)
    #: the running count-down of a PIN pause (one at a time)
    _countdown: Timer | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        state_dir = self.services.config.state_dir
        self.cache = self.shared_cache
        if self.cache is None:
            try:
                self.cache = HistoryCache.in_state_dir(state_dir)
            except CacheError as exc:
                log.warning("history cache unavailable: %s", exc)
        self.pin_gate = PinGate(state_dir)

    def feed(self) -> HistoryFeed:
        """History pages from the service, falling back to the cache (with the refunds
        this kiosk landed since laid over it)."""
        return HistoryFeed(
            self.services.client, self.cache, self.services.clock, self.refunded_here()
        )

    def refunded_here(self) -> RefundedHere | None:
        """Which rows a landed refund of the outbox gave back (None: not paired, no desk)."""
        desk = self.services.desk
        return None if desk is None else desk.listing.refunded_here

    def today(self) -> date:
        """The shop's business day now."""
        return today(self.services.clock())

    async def desk_behind_pin(self, pin: str) -> tuple[ChargeDesk | None, str | None]:
        """Check the manager PIN (a slow hash, off the event loop), then the paired desk:
        the desk, or None and the words that say why not (wrong PIN, locked, not paired)."""
        refusal = pin_refusal(await asyncio.to_thread(self.pin_gate.check, pin))
        if refusal is not None:
            return None, refusal
        desk = self.services.desk
        if desk is None:
            return None, t("reverse.not_paired")
        return desk, None

    def count_down(
        self, node: MessagePump, say: Callable[[str], None], gate: PinGate | None = None
    ) -> None:
        """While the PIN pause lasts (the manager's, or `gate`'s), `say` each second how
        long is left, then that the PIN may be tried again; the timer is `node`'s, so it
        ends with its screen."""
        if self._countdown is not None:
            self._countdown.stop()
            self._countdown = None
        paused = gate or self.pin_gate
        if paused.wait_s() <= 0:
            return

        def tick() -> None:
            left = paused.wait_s()
            if left > 0:
                say(t("reverse.pin_locked", seconds=math.ceil(left)))
                return
            timer.stop()
            say(t("reverse.pin_again"))

        timer = self._countdown = node.set_interval(1.0, tick)

    def close(self) -> None:
        """Close the cache if it is this visit's own."""
        if self.cache is not None and self.cache is not self.shared_cache:
            self.cache.close()
        self.cache = None
