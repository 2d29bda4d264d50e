"""The sandbox's records, identifier shapes, timestamps and the listing cursor."""

from __future__ import annotations

import base64
import json
import secrets
import string
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from qrpos import spec
from qrpos.service.models import Transaction

_ALNUM = string.ascii_letters + string.digits

#: the sandbox's own 400 text for a cursor it did not issue (the spec lists none)
INVALID_CURSOR_TEXT = "invalid `cursor`"


def _alnum(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def new_username() -> str:
    """``term_`` + 8 alphanumerics."""
    return spec.USERNAME_PREFIX + _alnum(spec.USERNAME_SUFFIX_LEN)


def new_password() -> str:
    """``vpt_`` + 32 alphanumerics."""
    return spec.PASSWORD_PREFIX + _alnum(spec.PASSWORD_SUFFIX_LEN)


def new_tx_id() -> str:
    """``tx_`` + 24 hex digits (fast enough for seeding tens of thousands of rows)."""
    return spec.TX_PREFIX + secrets.token_hex(12)


def new_terminal_id() -> str:
    """``ter_`` + 16 alphanumerics."""
    return spec.TERMINAL_PREFIX + _alnum(16)


def new_wallet_id() -> str:
    """``wal_`` + 16 alphanumerics (wallet ids never appear in the terminal API)."""
    return "wal_" + _alnum(16)


def new_qr_token() -> str:
    """``vqr_`` + 40 URL-safe characters, like a wallet pass shows."""
    return spec.TOKEN_PREFIX + secrets.token_urlsafe(30)


def new_receipt_number() -> str:
    """A VAT receipt (ДДТД) number: 33 digits."""
    return str(secrets.randbelow(10**33)).zfill(33)


def to_micros(moment: datetime) -> int:
    """Microseconds since the epoch of an aware datetime (the sort key of the history)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime; pass an aware one")
    delta = moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """The inverse of `to_micros`, in UTC."""
    return datetime.fromtimestamp(micros // 1_000_000, UTC).replace(microsecond=micros % 1_000_000)


def format_timestamp(micros: int) -> str:
    """RFC 3339 in UTC with fractional seconds, e.g. ``2024-05-01T08:00:00.123456Z``."""
    moment = from_micros(micros)
    # Always 6 fractional digits and a 4-digit year (strftime's %Y drops leading zeros).
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S.%f}Z"


def encode_cursor(key: tuple[int, str]) -> str:
    """An opaque cursor for the keyset position *after* ``key`` (newest first)."""
    raw = json.dumps([1, key[0], key[1]], separators=(",", ":")).encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str] | None:
    """The keyset position of a cursor this sandbox issued, or None."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        version, micros, tx_id = json.loads(raw)
    except (ValueError, TypeError, RecursionError):  # binascii.Error is a ValueError
        return None
    if version != 1 or not isinstance(micros, int) or not isinstance(tx_id, str):
        return None
    return micros, tx_id


@dataclass(frozen=True)
class TerminalCredentials:
    """A terminal as the merchant dashboard shows it once (the password is not in repr)."""

    username: str
    password: str = field(repr=False)
    terminal_id: str
    merchant: str


@dataclass(frozen=True)
class WalletInfo:
    """A wallet's current state; `qr_token` is the one its pass shows right now."""

    wallet_id: str
    qr_token: str
    balance_mnt: int
    suspended: bool


@dataclass
class Terminal:
    """A terminal's record."""

    username: str
    password: str = field(repr=False)
    terminal_id: str
    merchant: str
    suspended: bool = False

    def credentials(self) -> TerminalCredentials:
        return TerminalCredentials(self.username, self.password, self.terminal_id, self.merchant)


@dataclass
class Wallet:
    """A wallet's record."""

    wallet_id: str
    balance_mnt: int
    qr_token: str
    suspended: bool = False

    def info(self) -> WalletInfo:
        return WalletInfo(self.wallet_id, self.qr_token, self.balance_mnt, self.suspended)


@dataclass
class SimTransaction:
    """A transaction with everything the service knows (more than a terminal sees)."""

    id: str
    amount_mnt: int
    status: spec.TxStatus
    type: spec.TxType
    created_us: int
    vat_status: spec.VatStatus | None = None
    vat_receipt_id: str = ""
    terminal_id: str | None = None
    username: str | None = None
    merchant: str | None = None
    wallet_id: str | None = None
    #: when the pending receipt is issued / the reversed one voided (clock micros)
    vat_due_us: int | None = None

    @property
    def created_at(self) -> datetime:
        return from_micros(self.created_us)

    def to_wire(self) -> Transaction:
        """The projection a terminal sees (no wallet, merchant or employer ids), as the very
        struct the client decodes (its names, optional fields and checks)."""
        return Transaction(
            id=self.id,
            amount_mnt=self.amount_mnt,
            status=self.status,
            type=self.type,
            vat_receipt_id=self.vat_receipt_id,
            vat_status=self.vat_status,
            terminal_id=self.terminal_id,
            created_at_text=format_timestamp(self.created_us),
        )


@dataclass(frozen=True)
class Reply:
    """What the service answers: a JSON body, a plain-text line, or nothing."""

    status: int
    json: Any = None
    text: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def error(cls, status: int, text: str) -> Reply:
        return cls(status=status, text=text)
