"""How hard and how long the resolver tries: bounded, jittered, persisted.

The schedule lives in the outbox (attempt count, next try time) rather than in a
retry library's in-process loop, because it must survive a crash or a restart of
`qrpos charge`: the next process continues the same backoff with the same key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from qrpos import spec
from qrpos.spec import bounded_retry_after


@dataclass(frozen=True)
class RetryPolicy:
    """Limits of the resolver. All times in seconds.

    * re-sending (same Idempotency-Key) goes in a burst of `max_sends` requests, then one
      more after each look-up the service answered (the same key replays the 201 or
      charges once: the fastest proof once the service answers again), until
      `resend_horizon_s` after the first send: the service's key retention is unknown, so
      past that only the history is consulted. Abandoned sales are never resent;
    * a sale whose history shows nothing is declared not charged only once resending
      stopped, `settle_s` passed since the last unclear request ended (a slow request may
      still commit late), the look-up ran on a measured server clock, and either the
      service answered this key (422, 409, another 4xx) or `absent_after_s` passed since
      the first send (the ceiling for a service that never answers);
    * without a trusted measurement of the server's clock a window widens by
      `max_clock_skew_s`; a measurement taken within `clock_fresh_s` of a sale is trusted
      for it;
    * backoff is exponential from `base_delay_s` to `max_delay_s` with full jitter; a
      429's `Retry-After` is honoured when longer, up to four times `max_delay_s`
      (`bounded_retry_after`, shared with the history and report paging).
    """

    base_delay_s: float = 0.5
    max_delay_s: float = 15.0
    max_sends: int = 12
    resend_horizon_s: float = 300.0
    absent_after_s: float = 600.0
    settle_s: float = spec.CLIENT_TIMEOUT_S + 5.0
    #: tolerance added to each side of the history window beyond the measured skew
    window_margin_s: float = 5.0
    #: pause between history lookups that found nothing
    lookup_interval_s: float = 5.0
    #: how far a Pi's clock may plausibly be off when nothing measured it yet
    max_clock_skew_s: float = 900.0
    #: a clock measurement this close to a sale is trusted for it
    clock_fresh_s: float = 300.0
    #: False in tests: waits are skipped (the schedule is still computed and stored)
    sleep: bool = True

    @classmethod
    def testing(cls, **overrides: float | int | bool) -> RetryPolicy:
        """No real waiting and short horizons: for tests and in-process campaigns."""
        base = cls(
            base_delay_s=0.0,
            max_delay_s=0.0,
            max_sends=6,
            resend_horizon_s=3600.0,
            absent_after_s=0.0,
            settle_s=0.0,
            window_margin_s=2.0,
            lookup_interval_s=0.0,
            sleep=False,
        )
        return replace(base, **overrides)  # type: ignore[arg-type]

    def backoff_s(
        self, attempt: int, retry_after_s: float | None = None, *, jitter: float
    ) -> float:
        """Delay before send number `attempt + 1` (full jitter, capped).

        `jitter` is a draw from [0, 1] the caller made (`Context.jitter`): the policy gives
        one answer per input, and a test or a replay hands in the draw it wants."""
        delay = self.ceiling_s(attempt) * min(1.0, max(0.0, jitter))
        return max(delay, bounded_retry_after(retry_after_s, self.longest_wait_s))

    def ceiling_s(self, attempt: int) -> float:
        """The longest backoff after `attempt` sends (before a `Retry-After`).

        The doubling stops at 2**62: a sale held for hours sends a thousand times and more,
        and 2.0**1024 raises OverflowError (a campaign crashed the till so at attempt
        1,025); any delay the cap allows is reached long before."""
        return min(self.max_delay_s, self.base_delay_s * 2.0 ** min(62, max(0, attempt - 1)))

    @property
    def longest_wait_s(self) -> float:
        """The longest wait the policy asks for: a 429's `Retry-After`, bounded."""
        return self.max_delay_s * 4
