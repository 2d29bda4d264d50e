"""Settings of the sandbox, including one option for every "not shown" of the spec."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from qrpos import spec

#: what a reused Idempotency-Key with a different body does (the spec does not say)
SameKeyNewBody = Literal["replay", "conflict", "unprocessable", "new_charge"]
#: what reversing a charge whose VAT receipt is still pending does (the spec does not say)
ReversePendingReceipt = Literal["issue_then_void", "void_without_number", "error_until_issued"]


@dataclass
class SimulatorOptions:
    """How the sandbox behaves where the spec leaves room, and its gateway ceiling.

    - ``same_key_new_body``: ``replay`` returns the original transaction regardless of the
      new body; ``conflict`` answers ``409`` with a plain text; ``unprocessable`` answers
      ``422`` with code ``idempotency_key_reused``; ``new_charge`` ignores the key.
    - ``reverse_pending_receipt``: ``issue_then_void`` accepts the reversal and the receipt
      is issued, then voided (number kept); ``void_without_number`` voids it with an empty
      number; ``error_until_issued`` answers ``500 internal error`` (nothing applied) while
      the receipt is pending.
    - ``ready_failed_dependency``: the name of a dependency `/ready` reports as down (with
      ``ready_failed_status``), or None.
    - ``clock_offset_s``: the service's clock runs this many seconds ahead of real time
      (behind when negative): `createdAt`, the `Date` header, the list's default window,
      key retention and VAT delays all read it.
    """

    vat_issue_delay_s: float = 10.0
    vat_void_delay_s: float = 30.0
    rate_limit_enabled: bool = True
    rate_sustained_rps: float = spec.RATE_SUSTAINED_RPS
    rate_burst: int = spec.RATE_BURST
    #: send `Retry-After` (whole seconds until a request would pass) with a 429
    rate_retry_after: bool = True
    #: how long an Idempotency-Key is remembered; None = forever
    idempotency_retention_s: float | None = None
    same_key_new_body: SameKeyNewBody = "replay"
    reverse_pending_receipt: ReversePendingReceipt = "issue_then_void"
    ready_failed_dependency: str | None = None
    ready_failed_status: int = 503
    #: seconds the service's clock runs ahead of true time (negative: behind); applies to
    #: `createdAt`, the list's default window and the `Date` header alike
    clock_offset_s: float = 0.0
    #: SQLite file that keeps the state across restarts; None = memory only
    db_path: Path | None = None

    def __post_init__(self) -> None:
        if self.same_key_new_body not in ("replay", "conflict", "unprocessable", "new_charge"):
            raise ValueError(f"unknown same_key_new_body {self.same_key_new_body!r}")
        if self.reverse_pending_receipt not in (
            "issue_then_void",
            "void_without_number",
            "error_until_issued",
        ):
            raise ValueError(f"unknown reverse_pending_receipt {self.reverse_pending_receipt!r}")
        if self.rate_sustained_rps <= 0 or self.rate_burst < 1:
            raise ValueError("the rate limit needs a positive rate and a burst of at least 1")
        if self.vat_issue_delay_s < 0 or self.vat_void_delay_s < 0:
            raise ValueError("VAT delays cannot be negative")
        if (
            not isinstance(self.clock_offset_s, int | float)
            or isinstance(self.clock_offset_s, bool)
            or not math.isfinite(self.clock_offset_s)
        ):
            raise ValueError("clock_offset_s must be a finite number of seconds")
