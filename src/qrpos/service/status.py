"""The status map: how an HTTP status becomes an outcome value, one table per operation.

The spec says to branch on the status first, never on the message text. Each table maps
an exact status code (``409``), a status class (``"4xx"``) or the fallback ``"*"`` to a
rule that builds the outcome; `outcome_for` looks them up in that order. The text of a
plain-text error is carried only for display.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import httpx

from qrpos import spec
from qrpos.said import say
from qrpos.service.models import MalformedResponse, decode_page, decode_transaction
from qrpos.service.outcomes import (
    AlreadyReversed,
    Approved,
    BadRequest,
    ChargeOutcome,
    CredentialsRejected,
    Declined,
    Exchange,
    Forbidden,
    ListOutcome,
    NotFound,
    Page,
    Probe,
    ProbeOutcome,
    RateLimited,
    Refunded,
    Refused,
    ReverseOutcome,
    TokenUsed,
    Unresolved,
)


def retry_after_of(response: httpx.Response) -> float | None:
    """The seconds a `Retry-After` header asks for (delta or HTTP date), None when absent
    or unreadable."""
    raw = response.headers.get(spec.RETRY_AFTER_HEADER)
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        # "inf" and "nan" parse as floats; a backoff cannot wait on either.
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _text(response: httpx.Response) -> str:
    """The plain-text error line without its trailing newline, bounded for display."""
    try:
        text = response.content.decode("utf-8", errors="replace")
    except httpx.ResponseNotRead:  # pragma: no cover - we always read
        return ""
    return text.rstrip("\n")[:500]


def _json(response: httpx.Response) -> Any:
    try:
        return json.loads(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise MalformedResponse(f"HTTP {response.status_code} body is not JSON") from None


OutcomeT = TypeVar("OutcomeT")
#: one row of the status map: the response (body read) and its exchange -> an outcome
Rule = Callable[[httpx.Response, Exchange], OutcomeT]
#: exact status codes (int), status classes ("2xx".."5xx") and the fallback "*"
StatusTable = Mapping[int | str, Rule[OutcomeT]]


def outcome_for(
    table: StatusTable[OutcomeT], response: httpx.Response, exchange: Exchange
) -> OutcomeT:
    """The table's outcome for a response: exact code first, then its class, then ``*``."""
    status = response.status_code
    rule = table.get(status) or table.get(f"{status // 100}xx") or table["*"]
    return rule(response, exchange)


def garbled(exc: Exception, exchange: Exchange) -> Unresolved:
    """A reply that cannot be read (malformed, too long): its outcome is unknown."""
    said = say("unclear.garbled", "garbled response: {detail}", detail=str(exc))
    return Unresolved.because(said, exchange=exchange)


def _approved(response: httpx.Response, exchange: Exchange) -> Approved | Unresolved:
    try:
        tx = decode_transaction(response.content, "charge response")
    except MalformedResponse as exc:
        # The charge may well have been applied: only the history can tell.
        return garbled(exc, exchange)
    return Approved(transaction=tx, exchange=exchange)


def _declined(response: httpx.Response, exchange: Exchange) -> Declined:
    try:
        body = _json(response)
    except MalformedResponse:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        return Declined(code=body["code"], body=body, exchange=exchange)
    return Declined(code="", body={}, exchange=exchange)


def _page(response: httpx.Response, exchange: Exchange) -> Page | Unresolved:
    try:
        page = decode_page(response.content)
    except MalformedResponse as exc:
        return garbled(exc, exchange)
    return Page(page=page, exchange=exchange)


def _probe(response: httpx.Response, exchange: Exchange) -> Probe | Unresolved:
    try:
        body = _json(response)
    except MalformedResponse as exc:
        return Unresolved(reason=str(exc), exchange=exchange)
    if isinstance(body, dict):
        return Probe(body=body, exchange=exchange)
    return Unresolved(reason="probe body is not a JSON object", exchange=exchange)


def _credentials_rejected(response: httpx.Response, exchange: Exchange) -> CredentialsRejected:
    return CredentialsRejected(exchange=exchange)


def _rate_limited(response: httpx.Response, exchange: Exchange) -> RateLimited:
    return RateLimited(retry_after_s=retry_after_of(response), exchange=exchange)


def _service_error(response: httpx.Response, exchange: Exchange) -> Unresolved:
    said = say("unclear.service_error", "service error HTTP {status}", status=response.status_code)
    return Unresolved.because(said, exchange=exchange)


def _unexpected(response: httpx.Response, exchange: Exchange) -> Unresolved:
    said = say("unclear.unexpected_status", "unexpected HTTP {status}", status=response.status_code)
    return Unresolved.because(said, exchange=exchange)


def _bad_request(response: httpx.Response, exchange: Exchange) -> BadRequest:
    return BadRequest(message=_text(response), exchange=exchange)


def _forbidden(response: httpx.Response, exchange: Exchange) -> Forbidden:
    return Forbidden(message=_text(response), exchange=exchange)


def _not_found(response: httpx.Response, exchange: Exchange) -> NotFound:
    return NotFound(message=_text(response), exchange=exchange)


def _refused(response: httpx.Response, exchange: Exchange) -> Refused:
    return Refused(message=f"HTTP {response.status_code}: {_text(response)}", exchange=exchange)


def _token_used(response: httpx.Response, exchange: Exchange) -> TokenUsed:
    return TokenUsed(message=_text(response), exchange=exchange)


def _refunded(response: httpx.Response, exchange: Exchange) -> Refunded:
    return Refunded(exchange=exchange)


def _already_reversed(response: httpx.Response, exchange: Exchange) -> AlreadyReversed:
    return AlreadyReversed(message=_text(response), exchange=exchange)


#: the rows every `/v1` operation shares (spec: Errors, caller handling)
_V1_STATUS: StatusTable[CredentialsRejected | RateLimited | Unresolved | Refused] = {
    401: _credentials_rejected,
    429: _rate_limited,
    "5xx": _service_error,
    "4xx": _refused,
    "*": _unexpected,
}
CHARGE_STATUS: StatusTable[ChargeOutcome] = {
    **_V1_STATUS,
    spec.CHARGE_SUCCESS_STATUS: _approved,
    # the contract names 201: another 2xx (200, 202) may or may not have charged
    "2xx": _unexpected,
    400: _bad_request,
    403: _forbidden,
    404: _not_found,
    409: _token_used,
    422: _declined,
}
REVERSE_STATUS: StatusTable[ReverseOutcome] = {
    **_V1_STATUS,
    "2xx": _refunded,
    400: _bad_request,
    403: _forbidden,
    404: _not_found,
    409: _already_reversed,
}
LIST_STATUS: StatusTable[ListOutcome] = {**_V1_STATUS, 200: _page, 400: _bad_request}
PROBE_STATUS: StatusTable[ProbeOutcome] = {
    200: _probe,
    429: _rate_limited,
    "5xx": lambda r, e: Unresolved(reason=f"HTTP {r.status_code}", exchange=e),
    "*": lambda r, e: Refused(message=f"HTTP {r.status_code}", exchange=e),
}
