"""Review 3 of issue 47: the look-up's probe for rows stamped ahead of the service's `Date`
(`lookup.look_up`'s second request, bd329c6) placed its `from` on the kiosk's wall clock
read after the pages (`now().wall + offset`, the offset measured on the first page).

A Pi boots on its last saved time and NTP then steps the wall clock, often by hours, right
when `recover` runs its look-ups: a step forward between the first page and the probe puts
the probe's `from` an hour past the service's clock, so it misses the high-water mark a
service whose clock went back stamps at, and the sale's charge stamped past its window is
proven absent (the seed-74 story, "not charged" while charged). A step back asks from an
hour before the service's clock, and the newest ordinary row becomes a false mark that
stretches every open window to it. Both are measured here on one look-up against the
sandbox (in-process ASGI), with a `now` whose wall clock steps after the first page and a
boot clock that never steps; the probe must be placed on the boot clock.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from qrpos.ledger.clockreading import Window
from qrpos.ledger.lookup import look_up
from qrpos.ledger.states import Moment
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox

STEP_S = 3600.0


def _stepping_now(step_s: float) -> Callable[[], Moment]:
    """The kiosk's clocks: the wall clock steps by `step_s` after the first page (the
    look-up's third read: its start, the page's send, the page's end); the boot clock
    counts real seconds."""
    calls = itertools.count()

    def now() -> Moment:
        real = time.time()
        return Moment(real + (step_s if next(calls) >= 3 else 0.0), "boot-1", real - 1e9)

    return now


async def _a_mark_ahead(asgi_client: TerminalClient, sandbox: Sandbox) -> datetime:
    """A charge committed on the service's clock, which then goes back ten minutes: its
    stamp is 600 s ahead of the service's `Date`."""
    wallet = sandbox.create_wallet(100_000)
    outcome = await asgi_client.charge(wallet.qr_token, 7500, str(uuid.uuid4()))
    assert isinstance(outcome, Approved), outcome
    sandbox.set_clock_offset(-600.0)
    return outcome.transaction.created_at


def _span() -> Window:
    service = datetime.now(UTC) - timedelta(seconds=600)
    return Window(service - timedelta(seconds=60), service + timedelta(seconds=60))


@pytest.mark.parametrize("step_s", [0.0, STEP_S], ids=["steady", "wall_steps_forward"])
async def test_the_probe_finds_the_mark_whatever_the_wall_clock_did(
    asgi_client: TerminalClient, sandbox: Sandbox, step_s: float
) -> None:
    mark = await _a_mark_ahead(asgi_client, sandbox)
    seen = await look_up(asgi_client, _span(), _stepping_now(step_s))
    assert seen.failure is None, seen
    assert seen.ahead == pytest.approx(mark.timestamp(), abs=2.0), seen


async def test_a_wall_clock_stepped_back_mid_look_makes_no_false_mark(
    asgi_client: TerminalClient, sandbox: Sandbox
) -> None:
    # an ordinary row, stamped now on a service whose clock never went back
    wallet = sandbox.create_wallet(100_000)
    outcome = await asgi_client.charge(wallet.qr_token, 7500, str(uuid.uuid4()))
    assert isinstance(outcome, Approved), outcome
    service = datetime.now(UTC)
    span = Window(service - timedelta(seconds=3600), service - timedelta(seconds=3000))
    seen = await look_up(asgi_client, span, _stepping_now(-STEP_S))
    assert seen.failure is None, seen
    assert seen.ahead is None, seen
