"""What the scan loop reports (from its threads; a UI marshals them onto its own): a
token read while armed, a code refused, or the live figures."""

from __future__ import annotations

from dataclasses import dataclass

from qrpos.redact import token_tail
from qrpos.scanner.tokens import RefusalCode


@dataclass(frozen=True)
class TokenRead:
    """The armed loop read a token; it is now disarmed until `arm()`."""

    token: str

    def __repr__(self) -> str:
        return f"TokenRead({token_tail(self.token)})"


@dataclass(frozen=True)
class ScanRefused:
    """The armed loop saw a code it will not hand over; `reason` is safe to show."""

    reason: str
    code: RefusalCode = RefusalCode.NOT_A_TOKEN


@dataclass(frozen=True)
class ScanStats:
    """Live figures for the UI and `qrpos doctor`."""

    fps: float
    decode_ms: float
    last_error: str | None
    #: starting | running | no_frames | error | unavailable | stopped
    camera_state: str


ScanEvent = TokenRead | ScanRefused | ScanStats
