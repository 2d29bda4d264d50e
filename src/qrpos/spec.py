"""The Terminal Charge Service contract's literals, in one place.

Everything the spec fixes (paths, prefixes, limits, error texts, the auth realm, field
names, enum values) lives here, and both the client (`qrpos.service`) and the sandbox
(`qrpos.simulator`) take it from here, so the two cannot drift apart silently.
Values the spec leaves open ("not shown") are *not* here: they are options of the sandbox.
"""

from __future__ import annotations

import re
from datetime import timedelta
from enum import StrEnum
from typing import Final

API_VERSION: Final = "1.0.0"

# --- paths ---------------------------------------------------------------------------
CHARGE_PATH: Final = "/v1/transactions/charge-by-token"
#: a charge's success: "201 Created" with the Transaction (any other 2xx proves nothing)
CHARGE_SUCCESS_STATUS: Final = 201
REVERSE_PATH: Final = "/v1/transactions/{tx_id}/reverse"
#: a reversal's success: "204, empty body" (any other 2xx proves nothing)
REVERSE_SUCCESS_STATUS: Final = 204
LIST_PATH: Final = "/v1/transactions"
HEALTH_PATH: Final = "/health"
READY_PATH: Final = "/ready"

# --- authentication -------------------------------------------------------------------
AUTH_REALM: Final = "service-terminal"
WWW_AUTHENTICATE: Final = f'Basic realm="{AUTH_REALM}"'

# --- identifier shapes ----------------------------------------------------------------
USERNAME_PREFIX: Final = "term_"
USERNAME_SUFFIX_LEN: Final = 8
PASSWORD_PREFIX: Final = "vpt_"
PASSWORD_SUFFIX_LEN: Final = 32
TX_PREFIX: Final = "tx_"
TERMINAL_PREFIX: Final = "ter_"
TOKEN_PREFIX: Final = "vqr_"
TOKEN_PREFIX_BYTES: Final = TOKEN_PREFIX.encode("ascii")

USERNAME_RE: Final = re.compile(rf"^{USERNAME_PREFIX}[A-Za-z0-9]{{{USERNAME_SUFFIX_LEN}}}$")
PASSWORD_RE: Final = re.compile(rf"^{PASSWORD_PREFIX}[A-Za-z0-9]{{{PASSWORD_SUFFIX_LEN}}}$")
# A well-formed transaction id as far as a caller can tell; the service alone decides
# what exists. Used by the sandbox for `400 invalid transaction id` and by the UI to
# refuse an obviously mistyped id before anything is sent.
TX_ID_RE: Final = re.compile(rf"^{TX_PREFIX}[A-Za-z0-9]{{1,64}}$")

# --- limits -----------------------------------------------------------------------------
AMOUNT_MIN_MNT: Final = 1
AMOUNT_MAX_MNT: Final = 1_000_000
MAX_BODY_BYTES: Final = 1024 * 1024
IDEMPOTENCY_KEY_MAX_LEN: Final = 255
LIST_LIMIT_DEFAULT: Final = 100
LIST_LIMIT_MAX: Final = 1000
LIST_DEFAULT_WINDOW: Final = timedelta(days=30)
RATE_SUSTAINED_RPS: Final = 100.0
RATE_BURST: Final = 200
CLIENT_TIMEOUT_S: Final = 30.0
POLL_INTERVAL_S: Final = 30.0

# --- headers and wire fields ----------------------------------------------------------
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
RETRY_AFTER_HEADER: Final = "Retry-After"
TEXT_CONTENT_TYPE: Final = "text/plain; charset=utf-8"
JSON_CONTENT_TYPE: Final = "application/json"

FIELD_QR_TOKEN: Final = "qrToken"
FIELD_AMOUNT: Final = "amountMNT"
CHARGE_REQUEST_FIELDS: Final = frozenset({FIELD_QR_TOKEN, FIELD_AMOUNT})

# Local business day: Mongolia, UTC+8, no DST.
LOCAL_TIMEZONE: Final = "Asia/Ulaanbaatar"
LOCAL_UTC_OFFSET: Final = timedelta(hours=8)


class ErrorText:
    """The exact plain-text bodies (without the trailing newline) of the spec's errors."""

    INVALID_BODY: Final = "invalid request body"
    AMOUNT_NOT_POSITIVE: Final = "amount must be positive"
    INVALID_TX_ID: Final = "invalid transaction id"
    INVALID_FROM: Final = "invalid `from` (expected RFC3339)"
    INVALID_TO: Final = "invalid `to` (expected RFC3339)"
    FROM_AFTER_TO: Final = "`from` must be before `to`"
    INVALID_LIMIT: Final = "invalid `limit`"
    UNAUTHORIZED: Final = "unauthorized"
    FORBIDDEN: Final = "forbidden"
    TX_NOT_FOUND: Final = "transaction not found"
    TOKEN_USED: Final = "qr token already used"
    ALREADY_REVERSED: Final = "transaction already reversed"
    INTERNAL_ERROR: Final = "internal error"
    TOO_MANY_REQUESTS: Final = "Too Many Requests"


class TxStatus(StrEnum):
    """`Transaction.status`."""

    COMPLETED = "COMPLETED"
    REVERSED = "REVERSED"


class TxType(StrEnum):
    """`Transaction.type`; a terminal only ever creates `CHARGE`."""

    CHARGE = "CHARGE"
    CREDIT = "CREDIT"
    RECLAIM = "RECLAIM"


class VatStatus(StrEnum):
    """`Transaction.vatStatus`, present on `CHARGE` only."""

    PENDING = "pending"
    ISSUED = "issued"
    VOIDED = "voided"


class DeclineCode(StrEnum):
    """The decline codes the kiosk names in a person's words (`decline.*` in the
    catalogues, present/outcome.py; the customer display's reason, present/customer.py).
    The spec does not list the real set ("not shown"), so a caller must accept *any* code
    string: one not named here is shown as the bare code. The sandbox produces the first
    three (simulator/operations.py); `limit_exceeded` only a real service might send.
    CONTRIBUTING.md has the recipe for a new one."""

    INSUFFICIENT_FUNDS = "insufficient_funds"
    WALLET_SUSPENDED = "wallet_suspended"
    TOKEN_INVALID = "token_invalid"
    LIMIT_EXCEEDED = "limit_exceeded"


def amount_in_range(amount: int) -> bool:
    """True when `amount` is a chargeable whole-tugrik amount per the spec."""
    return AMOUNT_MIN_MNT <= amount <= AMOUNT_MAX_MNT


# --- caller handling -----------------------------------------------------------------
#: The longest a `Retry-After` is obeyed, in seconds. The spec asks for exponential
#: backoff with jitter; a gateway asking for an hour is either broken or hostile, and a
#: cashier or an owner cannot wait that long for an answer.
RETRY_AFTER_MAX_S = 60.0


def bounded_retry_after(retry_after_s: float | None, ceiling_s: float = RETRY_AFTER_MAX_S) -> float:
    """The wait a `Retry-After` may impose: never negative, never over `ceiling_s`.

    Shared by the ledger's backoff and the history/report paging, so the two honour a
    gateway's request the same way. No header (None) asks for no extra wait.
    """
    if retry_after_s is None or retry_after_s != retry_after_s:  # None or NaN
        return 0.0
    return min(max(0.0, retry_after_s), ceiling_s)
