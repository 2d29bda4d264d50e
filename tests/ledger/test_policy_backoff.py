"""The ledger's backoff is defined for every count of sends a held sale can reach."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from qrpos.ledger import RetryPolicy


@given(
    attempt=st.integers(min_value=0, max_value=10**9),
    jitter=st.floats(min_value=0.0, max_value=1.0),
    retry_after=st.none() | st.floats(min_value=0.0, max_value=1e6),
)
def test_a_backoff_after_any_number_of_sends_is_a_bounded_delay(
    attempt: int, jitter: float, retry_after: float | None
) -> None:
    policy = RetryPolicy()
    delay = policy.backoff_s(attempt, retry_after, jitter=jitter)
    assert 0.0 <= delay <= max(policy.max_delay_s, policy.longest_wait_s)
    assert policy.ceiling_s(attempt) <= policy.max_delay_s


def test_a_sale_held_past_a_thousand_sends_still_waits_the_longest_backoff() -> None:
    """A campaign's held sale reached attempt 1,025: 2.0**1024 overflowed and the till
    crashed on that sale."""
    policy = RetryPolicy()
    assert policy.ceiling_s(1025) == policy.max_delay_s
    assert policy.backoff_s(1025, None, jitter=1.0) == policy.max_delay_s
