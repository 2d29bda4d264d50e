"""No gateway can park a listing, a report or the outbox for an hour with `Retry-After`.

Every place that turns a 429 into a wait goes through `bounded_retry_after`; the paging
test goes through real HTTP to the sandbox and reads the wait stamina schedules (the
retry hook runs before the sleep, and stops the run there).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import stamina
from hypothesis import given
from hypothesis import strategies as st
from stamina.instrumentation import RetryDetails, set_on_retry_hooks

from qrpos.ledger.policy import RetryPolicy
from qrpos.reports.paging import fetch_page
from qrpos.reports.vat_watch import (
    RETRY_AFTER_CEILING_S,
    BatchedFollowPolicy,
    FixedIntervalPolicy,
    Pressure,
)
from qrpos.service import TerminalClient
from qrpos.service.limits import RETRY_AFTER_MAX_S, bounded_retry_after
from qrpos.simulator import Sandbox

waits = st.none() | st.floats(allow_nan=True, allow_infinity=True)


class _Scheduled(Exception):
    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s


def _stop_before_sleeping(details: RetryDetails) -> None:
    raise _Scheduled(details.wait_for)


@pytest.fixture
def real_backoff() -> Iterator[None]:
    with stamina.set_testing(False):
        set_on_retry_hooks([_stop_before_sleeping])
        try:
            yield
        finally:
            set_on_retry_hooks(None)


@pytest.mark.parametrize("asked_s", [3600.0, 86400.0, 61.0])
async def test_paging_waits_at_most_the_cap_whatever_the_gateway_asks(
    asgi_client: TerminalClient, sandbox: Sandbox, real_backoff: None, asked_s: float
) -> None:
    sandbox.arm_fault("rate_limit", operation="list", retry_after=asked_s)
    now = datetime.now(UTC)
    with pytest.raises(_Scheduled) as scheduled:
        await fetch_page(asgi_client, from_=now - timedelta(days=1), to=now, cursor=None, limit=5)
    assert 0 < scheduled.value.wait_s <= RETRY_AFTER_MAX_S


@given(waits)
def test_the_shared_bound_is_never_negative_nor_over_its_ceiling(asked: float | None) -> None:
    assert 0.0 <= bounded_retry_after(asked) <= RETRY_AFTER_MAX_S


@given(waits, st.floats(min_value=0, max_value=1))
def test_the_ledger_backoff_stays_within_its_bound(asked: float | None, jitter: float) -> None:
    policy = RetryPolicy()
    assert 0.0 <= policy.backoff_s(3, asked, jitter=jitter) <= policy.max_delay_s * 4


@given(st.floats(min_value=0, max_value=1e12), st.booleans(), st.integers(0, 8))
def test_the_vat_follow_up_stays_within_its_bound(asked: float, poll: bool, level: int) -> None:
    # the follow-up's hold is arithmetic on the pressure: no client, cache or clock needed
    now = 1_000_000.0
    batched = BatchedFollowPolicy()
    fixed = FixedIntervalPolicy()
    for policy, own_floor in (
        (batched, batched.first_check_s * (1.0 + batched.jitter)),
        (fixed, fixed.max_backoff_s * 1.25),
    ):
        for before in (Pressure(level, 0.0), Pressure(level, now + 1.0)):
            after = policy.rate_limited(before, now, asked, 1.0, poll=poll)
            assert after.not_before - now <= max(RETRY_AFTER_CEILING_S, own_floor, 1.0)
