"""The service's wire models: one set of msgspec structs for the client, reports and sandbox.

Each resource of the spec (Transaction, TransactionPage, ChargeRequest) is a struct that
msgspec decodes strictly and typed, straight from bytes, in C; the spec's rules live here:

- `id` starts ``tx_``; `terminalID`, when present, ``ter_``; `qrToken` is a non-empty string;
- `amountMNT` of a transaction is a positive int64 (a charge's 1..1,000,000 is a business
  rule with its own error text, so the sandbox checks it after decoding the shape);
- `status`, `type` and `vatStatus` are the spec's enums; `vatStatus` is present on a
  ``CHARGE`` and only on one;
- `createdAt` is an RFC 3339 date-time in UTC. It is checked by msgspec's RFC 3339 parser
  (a second pass over the same bytes that skips every other field) and kept as the exact
  text the service sent: Python's datetime stops at the microsecond, and msgspec's datetime
  rounds, which would move a charge at 23:59:59.9999996 into the next day.
  `Transaction.created_at` gives the instant truncated to the microsecond.

Unknown fields, decided per side: a response may grow fields and the client ignores them
(they are not kept); a charge body may not, and the sandbox answers ``400 invalid request
body`` (the spec's rule 1). Every failure to decode a response is a `MalformedResponse`
naming the field (msgspec's path, e.g. ``$.transactions[3].amountMNT``).
"""

from datetime import UTC, datetime
from typing import Annotated, Any, Final, TypeVar

import msgspec
from msgspec import Meta, Struct, field

from qrpos import spec
from qrpos.errors import QrposError

INT64_MAX: Final = 2**63 - 1
#: an error message quotes at most this much of what msgspec said (it may quote a value)
_MESSAGE_MAX: Final = 300
_CHARGE: Final = spec.TxType.CHARGE
#: the offsets RFC 3339 writes UTC with
_UTC_SUFFIXES: Final = ("Z", "z", "+00:00", "-00:00")


class MalformedResponse(QrposError):
    """The service answered something that does not fit the contract.

    The message names the field and what was wrong; it never contains a token or a
    credential (responses carry neither).
    """


class Transaction(Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """The projection of a transaction that a terminal sees (the spec's first table).

    Fields are declared in the order the service sends them (msgspec decodes fastest so).
    """

    id: str
    amount_mnt: Annotated[int, Meta(ge=1, le=INT64_MAX)] = field(name=spec.FIELD_AMOUNT)
    status: spec.TxStatus
    type: spec.TxType
    vat_receipt_id: str = field(name="vatReceiptID")
    vat_status: spec.VatStatus | None = field(default=None, name="vatStatus")
    terminal_id: str | None = field(default=None, name="terminalID")
    #: `createdAt` exactly as the service wrote it (full precision)
    created_at_text: str = field(name="createdAt")

    def __post_init__(self) -> None:
        # the rules msgspec's types cannot say; one cheap test each, every row pays them
        if not self.id.startswith(spec.TX_PREFIX):
            raise ValueError(f"`id` must start with {spec.TX_PREFIX!r}")
        if (self.vat_status is None) is (self.type is _CHARGE):
            raise ValueError("`vatStatus` must be present on a CHARGE and only on one")
        if self.terminal_id is not None and not self.terminal_id.startswith(spec.TERMINAL_PREFIX):
            raise ValueError(f"`terminalID` must start with {spec.TERMINAL_PREFIX!r}")
        if not self.created_at_text.endswith(_UTC_SUFFIXES):
            raise ValueError("`createdAt` must be in UTC")

    @property
    def created_at(self) -> datetime:
        """The commit time as an aware UTC datetime (truncated to the microsecond)."""
        # fromisoformat truncates digits past the microsecond; it wants upper-case T and Z
        return datetime.fromisoformat(self.created_at_text.upper()).astimezone(UTC)

    def to_json(self) -> dict[str, Any]:
        """The transaction in the service's JSON shape, `createdAt` as it was sent."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    @property
    def is_charge(self) -> bool:
        return self.type is _CHARGE

    @property
    def is_completed(self) -> bool:
        return self.status is spec.TxStatus.COMPLETED


class TransactionPage(Struct, frozen=True, gc=False, kw_only=True):
    """One page of `GET /v1/transactions`; `next_cursor == ""` means the last page."""

    transactions: tuple[Transaction, ...]
    next_cursor: str = field(name="nextCursor")


class ChargeRequest(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The body of a charge: the token exactly as scanned and whole tugrik.

    No other field is accepted (the misspelling ``amountMnt`` is an unknown field). The
    amount is any JSON integer here; its range is checked by the service, which answers
    out-of-range amounts with a text of their own.
    """

    qr_token: Annotated[str, Meta(min_length=1)] = field(name=spec.FIELD_QR_TOKEN)
    amount_mnt: int = field(name=spec.FIELD_AMOUNT)


class _Stamp(Struct, gc=False):
    """`createdAt` alone, as msgspec's RFC 3339 parser reads it: the validation pass."""

    created_at: Annotated[datetime, Meta(tz=True)] = field(name="createdAt")


class _StampPage(Struct, gc=False):
    transactions: list[_Stamp]


# Built once: a decoder compiles its type on creation.
_TRANSACTION = msgspec.json.Decoder(Transaction)
_PAGE = msgspec.json.Decoder(TransactionPage)
_STAMP = msgspec.json.Decoder(_Stamp)
_STAMP_PAGE = msgspec.json.Decoder(_StampPage)
_CHARGE_REQUEST = msgspec.json.Decoder(ChargeRequest)
_ENCODER = msgspec.json.Encoder()

_T = TypeVar("_T")


def _malformed(where: str, exc: Exception) -> MalformedResponse:
    if isinstance(exc, UnicodeDecodeError):
        return MalformedResponse(f"{where}: not UTF-8")
    return MalformedResponse(f"{where}: {str(exc)[:_MESSAGE_MAX]}")


def _decode(
    decoder: msgspec.json.Decoder[_T],
    stamps: msgspec.json.Decoder[Any],
    body: bytes | str,
    where: str,
) -> _T:
    try:
        value = decoder.decode(body)
        stamps.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise _malformed(where, exc) from None
    return value


def decode_transaction(body: bytes | str, where: str = "transaction") -> Transaction:
    """A `Transaction` from JSON bytes (a charge response, a stored row), or raise
    `MalformedResponse`."""
    return _decode(_TRANSACTION, _STAMP, body, where)


def decode_page(body: bytes | str) -> TransactionPage:
    """A `TransactionPage` from the JSON bytes of a list response, or raise
    `MalformedResponse`."""
    return _decode(_PAGE, _STAMP_PAGE, body, "page")


def decode_charge_request(body: bytes) -> ChargeRequest:
    """A `ChargeRequest` from a request body; raises `msgspec.DecodeError` (or
    `UnicodeDecodeError`) for anything that is not exactly one."""
    return _CHARGE_REQUEST.decode(body)


def encode(value: Any) -> bytes:
    """JSON bytes of a wire struct (or of plain JSON values), compact."""
    return _ENCODER.encode(value)


def parse_transaction(obj: object, where: str = "transaction") -> Transaction:
    """A `Transaction` from already decoded JSON values, or raise `MalformedResponse`."""
    try:
        tx = msgspec.convert(obj, Transaction)
        msgspec.convert(obj, _Stamp)
    except msgspec.ValidationError as exc:
        raise _malformed(where, exc) from None
    return tx


def parse_page(obj: object) -> TransactionPage:
    """A `TransactionPage` from already decoded JSON values, or raise `MalformedResponse`."""
    try:
        page = msgspec.convert(obj, TransactionPage)
        msgspec.convert(obj, _StampPage)
    except msgspec.ValidationError as exc:
        raise _malformed("page", exc) from None
    return page


def transaction_from_json_text(text: str) -> Transaction:
    """Re-read a transaction stored as JSON text (the ledger's audit column)."""
    return decode_transaction(text, "stored transaction")


def parse_rfc3339(value: str) -> datetime:
    """Parse an RFC 3339 date-time (``Z`` or an offset) into an aware UTC datetime.

    Raises ValueError for anything else, including a naive timestamp.
    """
    # RFC 3339 wants the date and time joined by T (or t) and an explicit offset;
    # fromisoformat alone would also take a space, a bare date or a naive time
    if len(value) < 20 or value[10] not in "Tt" or value != value.strip():
        raise ValueError(f"not an RFC 3339 date-time: {value!r}")
    text = value[:-1] + "+00:00" if value[-1] in "zZ" else value
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(f"RFC 3339 date-time without an offset: {value!r}")
    return parsed if parsed.tzinfo is UTC else parsed.astimezone(UTC)


def format_rfc3339(moment: datetime) -> str:
    """UTC, microsecond precision, ``Z`` suffix: the form the service itself uses."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime; pass an aware one")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
