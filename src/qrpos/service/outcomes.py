"""What a call to the service came to, as values the ledger, the UI and the CLI render.

Built from the spec's status map and caller-handling table. The client branches on the
HTTP status first and never on message text; the text is only carried for display.

Every outcome carries `exchange`: what is known of the HTTP exchange (status, the
server's `Date`, when the request went out), which the ledger records for audit and
uses to estimate clock skew.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from qrpos.said import Said
from qrpos.service.models import Transaction, TransactionPage


@dataclass(frozen=True)
class Exchange:
    """Facts about one HTTP exchange, whatever its outcome."""

    status: int | None = None
    #: the server's `Date` header, when it sent one
    server_date: datetime | None = None
    #: local wall-clock time the request was sent (UTC)
    sent_at: datetime | None = None
    #: seconds from sending to the end of the response (or the failure)
    elapsed_s: float | None = None


_NO_EXCHANGE = Exchange()


@dataclass(frozen=True, kw_only=True)
class _Outcome:
    exchange: Exchange = field(default=_NO_EXCHANGE, compare=False)


# --- success --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Approved(_Outcome):
    """201 on a charge (or the replay of the original transaction for a reused key)."""

    transaction: Transaction


@dataclass(frozen=True, kw_only=True)
class Refunded(_Outcome):
    """204 on a reversal: the wallet is credited."""


@dataclass(frozen=True, kw_only=True)
class AlreadyReversed(_Outcome):
    """409 on a reversal: the refund already landed. Treated as success."""

    message: str = ""


@dataclass(frozen=True, kw_only=True)
class Page(_Outcome):
    """200 on a listing."""

    page: TransactionPage


@dataclass(frozen=True, kw_only=True)
class Probe(_Outcome):
    """200 from `/health` or `/ready`, with the decoded body."""

    body: dict[str, Any]


# --- final refusals (do not retry) ------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Declined(_Outcome):
    """422: the charge was declined. `code` is any string the service chose."""

    code: str
    body: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class TokenUsed(_Outcome):
    """409 on a charge: the token was already spent (or this is a duplicate).

    On a first attempt it means the customer's pass is stale; after an unclear attempt
    it may be our own earlier charge, which the ledger verifies in the history.
    """

    message: str = ""


@dataclass(frozen=True, kw_only=True)
class BadRequest(_Outcome):
    """400: the service's text says what was wrong."""

    message: str


@dataclass(frozen=True, kw_only=True)
class CredentialsRejected(_Outcome):
    """Any 401: stop and re-pair the terminal."""


@dataclass(frozen=True, kw_only=True)
class Forbidden(_Outcome):
    """403 on a reversal: another merchant's transaction, or not a charge."""

    message: str = ""


@dataclass(frozen=True, kw_only=True)
class NotFound(_Outcome):
    """404."""

    message: str = ""


@dataclass(frozen=True, kw_only=True)
class Refused(_Outcome):
    """Any other 4xx the table does not name: stop, retrying does not change it."""

    message: str = ""


# --- try again ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RateLimited(_Outcome):
    """429 from the gateway. Back off with jitter; reuse the same key."""

    retry_after_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class Unresolved(_Outcome):
    """The outcome is unknown: the operation may or may not have been applied.

    `sent` is False only when the connection failed before the request could have
    reached the service (connect error); then a retry is certainly safe.
    """

    reason: str
    sent: bool = True
    #: the reason in words for a person (`qrpos.said`); None: `reason` is all there is
    said: Said | None = None

    @classmethod
    def because(cls, said: Said, *, exchange: Exchange, sent: bool = True) -> Unresolved:
        """An unknown outcome whose reason is `said` (its English is the `reason`)."""
        return cls(reason=said.english, said=said, sent=sent, exchange=exchange)

    @property
    def why(self) -> Said:
        """The reason as a `Said`, whether or not it was given as one."""
        return self.said or Said.plain(self.reason)


ChargeOutcome = (
    Approved
    | Declined
    | TokenUsed
    | BadRequest
    | CredentialsRejected
    | Forbidden
    | NotFound
    | Refused
    | RateLimited
    | Unresolved
)
ReverseOutcome = (
    Refunded
    | AlreadyReversed
    | BadRequest
    | CredentialsRejected
    | Forbidden
    | NotFound
    | Refused
    | RateLimited
    | Unresolved
)
ListOutcome = Page | BadRequest | CredentialsRejected | Refused | RateLimited | Unresolved
ProbeOutcome = Probe | Refused | RateLimited | Unresolved

#: outcomes after which the same request may be sent again (same Idempotency-Key)
RETRYABLE = (RateLimited, Unresolved)


def is_refunded(outcome: ReverseOutcome) -> bool:
    """204 and 409 on a reversal both mean the customer has the money back."""
    return isinstance(outcome, Refunded | AlreadyReversed)
