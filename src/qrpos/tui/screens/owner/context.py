"""What the owner's screens share while the owner menu is open: the history cache,
the VAT follow-up and the PIN gate, built from the kiosk's services. No Textual."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date

from qrpos.reports.history import HistoryFeed
from qrpos.reports.history_cache import CacheError, HistoryCache
from qrpos.reports.localday import today
from qrpos.reports.pin_gate import PinGate
from qrpos.reports.vat_watch import VatFollowUp
from qrpos.tui.services import KioskServices

log = logging.getLogger("qrpos.tui.owner")


@dataclass
class OwnerContext:
    """Built once per visit to the owner menu; `close()` when the menu goes away."""

    services: KioskServices
    cache: HistoryCache | None = field(init=False, default=None)
    pin_gate: PinGate = field(init=False)

    def __post_init__(self) -> None:
        state_dir = self.services.config.state_dir
        try:
            self.cache = HistoryCache.in_state_dir(state_dir)
        except CacheError as exc:
            log.warning("history cache unavailable: %s", exc)
        self.pin_gate = PinGate(state_dir)
        self._vat: VatFollowUp | None = None

    @property
    def vat(self) -> VatFollowUp | None:
        """The follow-up over the current client (None when unpaired or no cache)."""
        client = self.services.client
        if client is None or self.cache is None:
            return None
        if self._vat is None or self._vat.client is not client:
            self._vat = VatFollowUp(client, self.cache, self.services.clock)
        return self._vat

    def feed(self) -> HistoryFeed:
        """History pages from the service, falling back to the cache."""
        return HistoryFeed(self.services.client, self.cache, self.services.clock)

    def today(self) -> date:
        """The shop's business day now."""
        return today(self.services.clock())

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
            self.cache = None
