"""Typed values of the service's resources, parsed strictly from its JSON.

Unknown extra fields are tolerated (the service may add some); a missing or mistyped
required field raises `MalformedResponse`, never a `KeyError` or `TypeError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from qrpos import spec


class MalformedResponse(Exception):
    """The service answered something that does not fit the contract.

    The message names the field and what was wrong; it never contains a token or a
    credential (responses carry neither).
    """


@dataclass(frozen=True, slots=True)
class Transaction:
    """The projection of a transaction that a terminal sees."""

    id: str
    amount_mnt: int
    status: spec.TxStatus
    type: spec.TxType
    vat_receipt_id: str
    vat_status: spec.VatStatus | None
    terminal_id: str | None
    created_at: datetime
    #: the object exactly as the service sent it, for the audit trail and `--json` output
    wire: Mapping[str, Any] = field(repr=False, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        """The transaction in the service's own JSON shape (as received)."""
        return dict(self.wire)

    @property
    def is_charge(self) -> bool:
        return self.type is spec.TxType.CHARGE

    @property
    def is_completed(self) -> bool:
        return self.status is spec.TxStatus.COMPLETED


@dataclass(frozen=True)
class TransactionPage:
    """One page of `GET /v1/transactions`; `next_cursor == ""` means the last page."""

    transactions: tuple[Transaction, ...]
    next_cursor: str


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


def _field(obj: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in obj:
        raise MalformedResponse(f"{where}: missing field {name!r}")
    value = obj[name]
    # bool is an int in Python; the contract never uses a boolean where it wants a number
    if type(value) is not kind and (
        not isinstance(value, kind) or (kind is int and isinstance(value, bool))
    ):
        raise MalformedResponse(
            f"{where}: field {name!r} should be {kind.__name__}, got {type(value).__name__}"
        )
    return value


# plain dict look-ups: an end-of-day report parses tens of thousands of rows
_STATUSES = {member.value: member for member in spec.TxStatus}
_TYPES = {member.value: member for member in spec.TxType}
_VAT_STATUSES = {member.value: member for member in spec.VatStatus}
_E = TypeVar("_E", spec.TxStatus, spec.TxType, spec.VatStatus)


def _enum(table: Mapping[str, _E], value: str, name: str, where: str) -> _E:
    member = table.get(value)
    if member is None:
        raise MalformedResponse(f"{where}: unknown {name} {value[:40]!r}")
    return member


def _optional_str(obj: Mapping[str, Any], name: str, where: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if type(value) is not str:
        raise MalformedResponse(f"{where}: field {name!r} should be str")
    return value


def parse_transaction(obj: object, where: str = "transaction") -> Transaction:
    """Build a `Transaction` from decoded JSON, or raise `MalformedResponse`.

    `obj` is kept as the transaction's `wire` form without a copy: pass a freshly
    decoded object, not one the caller goes on changing.
    """
    if not isinstance(obj, Mapping):
        raise MalformedResponse(f"{where}: expected a JSON object, got {type(obj).__name__}")
    tx_id = _field(obj, "id", str, where)
    if not tx_id.startswith(spec.TX_PREFIX):
        raise MalformedResponse(f"{where}: id does not start with {spec.TX_PREFIX!r}")
    amount = _field(obj, spec.FIELD_AMOUNT, int, where)
    if amount <= 0:
        raise MalformedResponse(f"{where}: amountMNT must be positive")
    status = _enum(_STATUSES, _field(obj, "status", str, where), "status", where)
    tx_type = _enum(_TYPES, _field(obj, "type", str, where), "type", where)
    receipt = _field(obj, "vatReceiptID", str, where)
    raw_vat = _optional_str(obj, "vatStatus", where)
    vat_status = None if raw_vat is None else _enum(_VAT_STATUSES, raw_vat, "vatStatus", where)
    if vat_status is None and tx_type is spec.TxType.CHARGE:
        raise MalformedResponse(f"{where}: a CHARGE must carry vatStatus")
    created_raw = _field(obj, "createdAt", str, where)
    try:
        created_at = parse_rfc3339(created_raw)
    except ValueError:
        raise MalformedResponse(f"{where}: createdAt is not RFC 3339") from None
    return Transaction(
        id=tx_id,
        amount_mnt=amount,
        status=status,
        type=tx_type,
        vat_receipt_id=receipt,
        vat_status=vat_status,
        terminal_id=_optional_str(obj, "terminalID", where),
        created_at=created_at,
        wire=obj,
    )


def parse_page(obj: object) -> TransactionPage:
    """Build a `TransactionPage` from decoded JSON, or raise `MalformedResponse`."""
    if not isinstance(obj, Mapping):
        raise MalformedResponse(f"page: expected a JSON object, got {type(obj).__name__}")
    rows = _field(obj, "transactions", list, "page")
    cursor = _field(obj, "nextCursor", str, "page")
    return TransactionPage(
        transactions=tuple(
            parse_transaction(row, f"page.transactions[{i}]") for i, row in enumerate(rows)
        ),
        next_cursor=cursor,
    )


def transaction_from_json_text(text: str) -> Transaction:
    """Re-read a transaction stored as JSON text (the ledger's audit column)."""
    try:
        return parse_transaction(json.loads(text))
    except json.JSONDecodeError:
        raise MalformedResponse("stored transaction is not JSON") from None
