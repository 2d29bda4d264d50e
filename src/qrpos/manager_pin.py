"""The shop manager's PIN, which guards reversals: stored as a salted scrypt hash only.

The PIN is set at pairing and lives in the state dir (`manager-pin`, mode 0600) as
``scrypt$n$r$p$salt$hash`` (hex). The clear PIN is never written or logged.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

from qrpos.errors import QrposError
from qrpos.said import say
from qrpos.statedir import write_private

PIN_FILE = "manager-pin"
#: the PIN `qrpos demo` sets in its own throw-away state dir (shown on its screen)
DEMO_PIN = "1234"
MIN_LEN = 4
MAX_LEN = 12
# scrypt cost: ~50 ms on a Pi 5, enough to make a stolen SD card's file slow to brute force
_N, _R, _P = 2**14, 8, 1


class PinError(QrposError, ValueError):
    """The PIN is not acceptable; the message says why (never the PIN)."""


def _check_shape(pin: str, *, cashier: bool = False) -> None:
    if not pin.isdigit() or not pin.isascii():
        if cashier:
            raise PinError(say("pin.cashier_digits", "a cashier's PIN is digits only"))
        raise PinError(say("pin.digits", "the manager PIN is digits only"))
    if not MIN_LEN <= len(pin) <= MAX_LEN:
        if cashier:
            raise PinError(
                say(
                    "pin.cashier_length",
                    "a cashier's PIN has {low} to {high} digits",
                    low=MIN_LEN,
                    high=MAX_LEN,
                )
            )
        raise PinError(
            say(
                "pin.length",
                "the manager PIN has {low} to {high} digits",
                low=MIN_LEN,
                high=MAX_LEN,
            )
        )


def _hash(pin: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(pin.encode("ascii"), salt=salt, n=n, r=r, p=p, dklen=32)


def pin_record(pin: str, *, cashier: bool = False) -> str:
    """`pin` as it is kept: ``scrypt$n$r$p$salt$hash`` (a new salt each time); PinError
    when it is not 4 to 12 digits."""
    _check_shape(pin, cashier=cashier)
    salt = secrets.token_bytes(16)
    digest = _hash(pin, salt, _N, _R, _P)
    return f"scrypt${_N}${_R}${_P}${salt.hex()}${digest.hex()}"


def record_matches(record: str, pin: str) -> bool:
    """True when `pin` is the PIN `record` (from `pin_record`) was made of."""
    try:
        scheme, n, r, p, salt_hex, digest_hex = record.strip().split("$")
        if scheme != "scrypt":
            return False
        expected = bytes.fromhex(digest_hex)
        salt = bytes.fromhex(salt_hex)
        n_i, r_i, p_i = int(n), int(r), int(p)
    except ValueError:
        return False
    if not pin.isascii() or not pin.isdigit():
        return False
    return hmac.compare_digest(_hash(pin, salt, n_i, r_i, p_i), expected)


def set_pin(state_dir: Path, pin: str) -> None:
    """Store a new PIN (replacing any old one) as a salted slow hash."""
    record = pin_record(pin) + "\n"
    # run as root by provision.sh: no planted link is followed, the kiosk user owns it
    write_private(state_dir, PIN_FILE, record.encode("ascii"))


def has_pin(state_dir: Path) -> bool:
    return (state_dir / PIN_FILE).is_file()


def verify_pin(state_dir: Path, pin: str) -> bool:
    """True when `pin` matches the stored one; False when it does not or none is set."""
    try:
        record = (state_dir / PIN_FILE).read_text(encoding="ascii")
    except (OSError, ValueError):
        return False
    return record_matches(record, pin)
