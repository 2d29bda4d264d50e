"""The Terminal Charge Service client: async httpx, typed models, outcome values."""

import sys
from typing import TYPE_CHECKING

from qrpos.lazy import lazy_exports

# httpx's package loads its own command-line client whenever click and pygments are
# installed (uvicorn and rich bring them): 5.5 MB of the kiosk's memory and about 15 ms
# of its start for a program it never runs. A None entry makes that one import fail,
# which httpx handles (its `httpx.main` then says the CLI is not installed); the client
# itself is unchanged. tests/test_start_light.py checks it still holds.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

if TYPE_CHECKING:
    from qrpos.service.client import (
        InsecureBaseURL,
        ListingFailed,
        TerminalClient,
        check_base_url,
        is_loopback_host,
    )
    from qrpos.service.models import (
        ChargeRequest,
        MalformedResponse,
        Transaction,
        TransactionPage,
        decode_page,
        decode_transaction,
        format_rfc3339,
        parse_page,
        parse_rfc3339,
        parse_transaction,
    )
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
        is_refunded,
    )

__all__ = [
    "AlreadyReversed",
    "Approved",
    "BadRequest",
    "ChargeOutcome",
    "ChargeRequest",
    "CredentialsRejected",
    "Declined",
    "Exchange",
    "Forbidden",
    "InsecureBaseURL",
    "ListOutcome",
    "ListingFailed",
    "MalformedResponse",
    "NotFound",
    "Page",
    "Probe",
    "ProbeOutcome",
    "RateLimited",
    "Refunded",
    "Refused",
    "ReverseOutcome",
    "TerminalClient",
    "TokenUsed",
    "Transaction",
    "TransactionPage",
    "Unresolved",
    "check_base_url",
    "decode_page",
    "decode_transaction",
    "format_rfc3339",
    "is_loopback_host",
    "is_refunded",
    "parse_page",
    "parse_rfc3339",
    "parse_transaction",
]

#: where each export lives: its module is loaded when the name is first read
_WHERE = {
    "AlreadyReversed": ".outcomes",
    "Approved": ".outcomes",
    "BadRequest": ".outcomes",
    "ChargeOutcome": ".outcomes",
    "ChargeRequest": ".models",
    "CredentialsRejected": ".outcomes",
    "Declined": ".outcomes",
    "Exchange": ".outcomes",
    "Forbidden": ".outcomes",
    "InsecureBaseURL": ".client",
    "ListOutcome": ".outcomes",
    "ListingFailed": ".client",
    "MalformedResponse": ".models",
    "NotFound": ".outcomes",
    "Page": ".outcomes",
    "Probe": ".outcomes",
    "ProbeOutcome": ".outcomes",
    "RateLimited": ".outcomes",
    "Refunded": ".outcomes",
    "Refused": ".outcomes",
    "ReverseOutcome": ".outcomes",
    "TerminalClient": ".client",
    "TokenUsed": ".outcomes",
    "Transaction": ".models",
    "TransactionPage": ".models",
    "Unresolved": ".outcomes",
    "check_base_url": ".client",
    "decode_page": ".models",
    "decode_transaction": ".models",
    "format_rfc3339": ".models",
    "is_loopback_host": ".client",
    "is_refunded": ".outcomes",
    "parse_page": ".models",
    "parse_rfc3339": ".models",
    "parse_transaction": ".models",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
