"""The ledger's one bounded wait for retries (`timing.retry_wait`): boot-clock seconds when
the process kept the due time, and never longer than the last answer could ask for."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import Moment
from qrpos.ledger.timing import due_on_boot, retry_wait

POLICY = RetryPolicy()
steps = st.floats(min_value=-86_400.0, max_value=86_400.0)


@given(steps, st.floats(min_value=0.0, max_value=1.0), st.integers(1, 12))
def test_a_step_of_the_wall_clock_changes_no_wait_on_the_same_boot(
    step: float, jitter: float, attempts: int
) -> None:
    then = Moment(1_800_000_000.0, "boot-a", 500.0)
    delay = POLICY.backoff_s(attempts, jitter=jitter)
    due_wall, due_up = then.wall + delay, due_on_boot(delay, then)
    later = Moment(then.wall + 2.0 + step, "boot-a", then.up + 2.0 if then.up else None)
    wait = retry_wait(due_wall, 500, attempts, POLICY, later, due_up)
    assert abs(wait - max(0.0, delay - 2.0)) < 1e-6


@given(steps, st.integers(1, 12), st.sampled_from([500, 429, None]))
def test_without_a_boot_stamp_the_wait_is_bounded_by_what_the_answer_asked(
    step: float, attempts: int, status: int | None
) -> None:
    then = Moment(1_800_000_000.0, "boot-a", 500.0)
    delay = POLICY.backoff_s(attempts, 30.0 if status == 429 else None, jitter=1.0)
    # another process (or a reboot) reads the stored wall time alone
    later = Moment(then.wall + step, "boot-b", 3.0)
    wait = retry_wait(then.wall + delay, status, attempts, POLICY, later)
    bound = POLICY.longest_wait_s if status == 429 else POLICY.ceiling_s(attempts)
    assert 0.0 <= wait <= bound
    # a clock stepped back further than any backoff: the stamp is from a clock that ran
    # ahead, and the try is due now
    if step < -bound:
        assert wait == 0.0


def test_the_backoff_is_one_answer_per_draw() -> None:
    assert POLICY.backoff_s(3, jitter=0.5) == POLICY.backoff_s(3, jitter=0.5)
    assert POLICY.backoff_s(3, jitter=0.0) == 0.0
    assert POLICY.backoff_s(3, jitter=1.0) == POLICY.ceiling_s(3)
