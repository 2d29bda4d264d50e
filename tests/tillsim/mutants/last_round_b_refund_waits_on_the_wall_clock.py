"""Mutant of issue 41's second defect (the last round): a refund's wait counted on the wall
clock.

A refund met 5xx and waits in the durable queue for its next try, stored as a wall time
(`next_try_at`). The fix counts the wait on the boot clock when this process scheduled it
(NTP never steps it), and otherwise reads the stored wall time bounded by the backoff's
own ceiling (`qrpos.ledger.timing.retry_wait`): a wall clock stepped back by hours holds
the refund no longer than its backoff. Before it, the refund waited until the wall clock
reached `next_try_at`: NTP stepping the Pi's clock back 2 hours held the customer's money
2 hours more (no request at all after the step), and a step forward rushed it.

`reintroduce` puts the wall-clock wait back in the refund's drive (`reversals.
drive_reversal` reads `retry_wait` through its module). A simulator that steps the kiosk's
wall clock back by hours while a refund backs off must then end the day with the refund
still waiting, the service answering all along.
"""

from __future__ import annotations

import pytest

from qrpos.ledger import reversals
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import Moment


def _wall_clock_wait(
    due: float | None,
    last_status: int | None,
    attempts: int,
    policy: RetryPolicy,
    now: Moment,
    due_up: tuple[str, float] | None = None,
) -> float:
    """The old wait: until the wall clock reads the stored due time, however far off."""
    del last_status, attempts, policy, due_up
    return 0.0 if due is None else max(0.0, due - now.wall)


def reintroduce(mp: pytest.MonkeyPatch) -> None:
    """Put the wall-clock wait back for the refund queue (sales keep the fixed one)."""
    mp.setattr(reversals, "retry_wait", _wall_clock_wait)
