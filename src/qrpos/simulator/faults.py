"""Fault injection and the gateway's request ceiling.

Before commit: ``error_before_commit`` (500, nothing applied), ``delay`` (a slow server
that still commits), ``rate_limit`` (429), ``forbidden`` (403 ``forbidden``, nothing
applied: the answer the contract gives a refund it will not make, aimed at one of the
kiosk's own charges so that a refusal can be met where the service would take it).
After commit: ``drop_after_commit`` (the connection dies, no reply),
``error_after_commit`` (500 although applied), ``trickle`` (the reply is sent
``bytes_per_s`` bytes a second, so each read arrives in time and only a deadline on the
whole request notices), ``mismatched_reply`` (the charge is applied
and answered 201, but the body names another amount: a reply that is not this request's,
as a confused gateway or cache would send). ``forget_idempotency`` treats the key as new.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

FaultKind = Literal[
    "drop_after_commit",
    "error_before_commit",
    "error_after_commit",
    "delay",
    "rate_limit",
    "forget_idempotency",
    "trickle",
    "mismatched_reply",
    "forbidden",
]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
#: the service operations a fault can be aimed at; None = any `/v1` request
OPERATIONS = ("charge", "reverse", "list", "health", "ready")


@dataclass
class Fault:
    """One armed fault: applies to the next `remaining` matching requests."""

    kind: str
    remaining: int
    operation: str | None = None
    seconds: float = 0.0
    retry_after: float | None = None
    #: how fast a ``trickle`` fault sends the reply's body
    bytes_per_s: float = 1.0

    def matches(self, operation: str) -> bool:
        if self.operation is None:
            return operation in ("charge", "reverse", "list")
        return self.operation == operation

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "count": self.remaining,
            "operation": self.operation,
            "seconds": self.seconds,
            "retryAfter": self.retry_after,
            "bytesPerSecond": self.bytes_per_s,
        }


def make_fault(kind: str, count: int = 1, **params: Any) -> Fault:
    """Validate and build a fault; raises ValueError with a clear message."""
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError("count must be a positive integer")
    unknown = set(params) - {"operation", "seconds", "retry_after", "bytes_per_s"}
    if unknown:
        raise ValueError(f"unknown fault parameter(s): {', '.join(sorted(unknown))}")
    operation = params.get("operation")
    if operation is not None and operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}; known: {', '.join(OPERATIONS)}")
    seconds = params.get("seconds", 0.0)
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
        raise ValueError("seconds must be a non-negative number")
    if kind == "delay" and seconds <= 0:
        raise ValueError("a delay fault needs seconds > 0")
    retry_after = params.get("retry_after", 1.0 if kind == "rate_limit" else None)
    if retry_after is not None and (
        not isinstance(retry_after, int | float) or isinstance(retry_after, bool) or retry_after < 0
    ):
        raise ValueError("retry_after must be a non-negative number or null")
    bytes_per_s = params.get("bytes_per_s", 1.0)
    if (
        not isinstance(bytes_per_s, int | float)
        or isinstance(bytes_per_s, bool)
        or not 0 < bytes_per_s < math.inf
    ):
        raise ValueError("bytes_per_s must be a positive number")
    return Fault(kind, count, operation, float(seconds), retry_after, float(bytes_per_s))


class FaultBook:
    """Armed faults, consumed in arming order by the requests they match."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def arm(self, fault: Fault) -> None:
        self._faults.append(fault)

    def clear(self) -> None:
        self._faults.clear()

    def take(self, operation: str, kinds: tuple[str, ...] | None = None) -> Fault | None:
        """Consume one use of the first armed fault matching this request, if any."""
        for fault in self._faults:
            if fault.matches(operation) and (kinds is None or fault.kind in kinds):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
                return fault
        return None

    def armed(self) -> list[Fault]:
        return list(self._faults)


class TokenBucket:
    """The gateway ceiling: `rate` requests per second sustained, `burst` at once."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def take(self) -> float | None:
        """None when the request passes; else seconds until one would."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        return (1.0 - self._tokens) / self.rate


def retry_after_header(seconds: float) -> str:
    """`Retry-After` in whole seconds, rounded up (0 stays 0)."""
    return str(math.ceil(max(0.0, seconds)))
