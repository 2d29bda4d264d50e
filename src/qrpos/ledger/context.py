"""What the resolver, the look-ups and the reversal queue share: the outbox, the client,
the limits and the clock."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from qrpos.ledger import clock as boot_clock
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import Moment
from qrpos.ledger.store import Ledger
from qrpos.service import TerminalClient


@dataclass
class Context:
    """What the resolver needs; shared with the reversal queue."""

    ledger: Ledger
    client: TerminalClient
    policy: RetryPolicy
    clock: Callable[[], datetime]
    #: the step-proof clock: (this boot's id, CLOCK_BOOTTIME seconds); tests hand in a fake
    boot: Callable[[], tuple[str | None, float | None]] = boot_clock.boot_stamp
    #: the backoff's jitter: a draw from [0, 1] handed to the policy (the core draws none)
    jitter: Callable[[], float] = random.random
    #: when each sale's and refund's next try is due on the boot clock, as this process
    #: scheduled it (`timing.retry_wait`): ("sale" or "refund", id) -> (boot id, seconds)
    due_up: dict[tuple[str, int], tuple[str, float]] = field(default_factory=dict)

    def now(self) -> float:
        """The wall clock as UTC epoch seconds (what the outbox stores)."""
        return self.clock().timestamp()

    def moment(self) -> Moment:
        """Now on both clocks: what the decision core takes (`qrpos.ledger.timing`)."""
        boot, up = self.boot()
        return Moment(self.now(), boot, up)

    async def pause(self, seconds: float, deadline: float) -> bool:
        """Wait `seconds` unless that passes the deadline; False when it would."""
        if seconds <= 0:
            await asyncio.sleep(0)  # let other tasks run even when nothing is to wait
            return True
        if time.monotonic() + seconds > deadline:
            return False
        if self.policy.sleep:
            await asyncio.sleep(seconds)
        return True
