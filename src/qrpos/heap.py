"""The kiosk's heap after start-up: what is alive then stays alive, so the cyclic garbage
collector need not walk it again (issue 49: the customer display's tail).

A full (generation 2) collection walks every tracked object. Once the kiosk is up, that is
Textual's widgets and styles, the modules, the ledger and the client: on the shared 2-core
machine one such walk took 180 to 250 ms, and since it holds the GIL, the customer display's
worker thread waited behind it (benchmarks/customer_display.py takes each view over 100 ms
apart: every one of them had a generation-2 collection inside it). `gc.freeze()` moves the
objects alive at that moment into the permanent generation, which no collection walks; what
a sale makes afterwards is collected as before. One collection first, so that start-up's
garbage is freed rather than frozen.

What a sale makes still reaches the oldest generation, and its full collection still paused
a view now and then (one of 360 in a run). So full collections are put where no one waits:
`IdleCollector` runs one when the till has been idle (no sale under way) for a moment, and
the automatic threshold for them is raised tenfold, so that a lunch queue with no idle
moment still gets one, only rarely.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: full collections by themselves only after this many middle ones (CPython's default: 10)
FULL_EVERY_MIDDLE = 100


def freeze_startup_heap() -> int:
    """Collect start-up's garbage, then freeze what is alive, once per process (a test
    run starts many apps in one process: only the first one's heap is frozen, so the
    others' cycles are still collected); the number of objects frozen."""
    if gc.get_freeze_count():
        return 0
    gc.collect()
    gc.freeze()
    young, middle, _old = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY_MIDDLE)
    frozen = gc.get_freeze_count()
    log.debug("start-up heap frozen: %d objects", frozen)
    return frozen


@dataclass
class IdleCollector:
    """Full collections while the till is idle: none during a sale, none sooner than
    `idle_after_s` after it, at most one per `every_s`. Times are boot-clock seconds."""

    idle_after_s: float = 2.0
    every_s: float = 30.0
    idle_since: float | None = None
    last_full: float | None = None

    def due(self, now: float, busy: bool) -> bool:
        """Is a full collection due at `now` (a sale under way: `busy`)? Notes the idle."""
        if busy:
            self.idle_since = None
            return False
        if self.idle_since is None:
            self.idle_since = now
        if now - self.idle_since < self.idle_after_s:
            return False
        return self.last_full is None or now - self.last_full >= self.every_s

    def tick(self, now: float, busy: bool) -> bool:
        """Collect if due; True when it did."""
        if not self.due(now, busy):
            return False
        gc.collect()
        self.last_full = now
        return True
