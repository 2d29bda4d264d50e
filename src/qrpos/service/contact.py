"""What one client heard from the service: counts and times, kept in memory.

Two readers: the VAT follow-up (a 429 met by a charge lengthens the poll interval too:
the ceiling is shared) and the kiosk's metrics (reachability, 429s, credentials
rejected). The client notes every exchange here; nothing here sends a request.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class ContactLog:
    """Counters since the client was made; times are wall-clock epoch seconds."""

    #: answers received (any status)
    responses: int = 0
    #: 429s received, from any operation
    rate_limited: int = 0
    #: requests that got no answer (connection failed, timeout, transport error)
    unreachable: int = 0
    #: 401s received
    credentials_rejected: int = 0
    last_response_at: float | None = None
    last_unreachable_at: float | None = None
    #: the status of the latest answer (None: none yet)
    last_status: int | None = None
    #: the Retry-After of the latest 429 (None: absent)
    last_retry_after_s: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def answered(self, status: int, retry_after_s: float | None = None) -> None:
        """The service answered with `status`."""
        with self._lock:
            self.responses += 1
            self.last_status = status
            self.last_response_at = time.time()
            if status == 429:
                self.rate_limited += 1
                self.last_retry_after_s = retry_after_s
            elif status == 401:
                self.credentials_rejected += 1

    def no_answer(self) -> None:
        """A request got no answer."""
        with self._lock:
            self.unreachable += 1
            self.last_unreachable_at = time.time()

    @property
    def reachable(self) -> bool | None:
        """True when the latest exchange got an answer, False when it did not, None
        before any exchange."""
        with self._lock:
            answered, failed = self.last_response_at, self.last_unreachable_at
        if answered is None and failed is None:
            return None
        return (answered or 0.0) >= (failed or 0.0)


#: a reachability probe is skipped while the service answered within this long (an idle
#: till learns it is offline within 10 min; a sale learns it at once)
PROBE_QUIET_S = 600.0


def probe_due(
    last_heard: float | None, reachable: bool | None, now: float, quiet_s: float = PROBE_QUIET_S
) -> bool:
    """Whether a `GET /health` is worth sending at `now`: any answer is proof of
    reachability, so only a kiosk that heard nothing for `quiet_s` (or whose last
    exchange failed) spends a request of the shared ceiling on a probe."""
    if reachable is not True or last_heard is None:
        return True
    return now - last_heard >= quiet_s
