"""The token rules, applied to the raw bytes a decoder read.

A token is the QR's bytes exactly: it must start with ``vqr_`` and be valid UTF-8, and it
is never trimmed, case-folded, normalised or parsed. Anything else is refused with a
message that is safe to show (it never repeats what the code contained).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from qrpos import spec
from qrpos.redact import escape_text, token_tail

#: how many characters of a code's text `shorten` keeps for a diagnostic line
SHOWN_CHARS = 24


class RefusalCode(StrEnum):
    """Why a code was refused, for the UI's translated messages."""

    URL = "url"
    FOREIGN_PAYMENT = "foreign_payment"
    NOT_A_TOKEN = "not_a_token"  # noqa: S105 - a refusal code, not a secret
    INVALID_UTF8 = "invalid_utf8"
    SEVERAL_CARDS = "several_cards"
    HELD = "held"
    SPENT = "spent"


REFUSAL_TEXT: dict[RefusalCode, str] = {
    RefusalCode.URL: "This QR code is a web link, not a wallet pass.",
    RefusalCode.FOREIGN_PAYMENT: "This is another payment app's code; show the meal wallet's pass.",
    RefusalCode.NOT_A_TOKEN: "This QR code is not a meal wallet pass.",
    RefusalCode.INVALID_UTF8: "This QR code is damaged (not valid text): refresh the pass.",
    RefusalCode.SEVERAL_CARDS: "Several QR codes are in view: show one.",
    RefusalCode.HELD: "This code was in view before the last sale ended: take it away and "
    "show it again, or confirm it on screen.",
    RefusalCode.SPENT: "A payment was just taken with this code: wait for the pass to show a "
    "new code.",
}


@dataclass(frozen=True)
class ScannedToken:
    """A wallet token, exactly as the QR holds it. Show it only through `token_tail`."""

    token: str

    def __repr__(self) -> str:
        # a token in a traceback or log line must not be reconstructible
        return f"ScannedToken({token_tail(self.token)})"


@dataclass(frozen=True)
class Refusal:
    """A code that is not a usable token, with a message safe to put on screen."""

    reason: str
    code: RefusalCode = RefusalCode.NOT_A_TOKEN


def refusal(code: RefusalCode) -> Refusal:
    """The standard refusal for `code`."""
    return Refusal(REFUSAL_TEXT[code], code)


_URL_PREFIXES = (b"http://", b"https://", b"www.")
# EMVCo merchant-presented codes (QPay, SocialPay, most bank apps) open with the payload
# format indicator "000201"; the others are wallet URI schemes seen on shop counters.
_FOREIGN_PAYMENT_PREFIXES = (b"000201", b"wxp://", b"alipay", b"upi://", b"bitcoin:")


def classify(raw: bytes) -> ScannedToken | Refusal:
    """A `ScannedToken` when `raw` is a token by the rules above, else a `Refusal`."""
    if raw.startswith(spec.TOKEN_PREFIX_BYTES):
        try:
            return ScannedToken(raw.decode("utf-8", errors="strict"))
        except UnicodeDecodeError:
            return refusal(RefusalCode.INVALID_UTF8)
    folded = raw.lower()
    if folded.startswith(_URL_PREFIXES):
        return refusal(RefusalCode.URL)
    if folded.startswith(_FOREIGN_PAYMENT_PREFIXES):
        return refusal(RefusalCode.FOREIGN_PAYMENT)
    return refusal(RefusalCode.NOT_A_TOKEN)


def shorten(raw: bytes | str, limit: int = SHOWN_CHARS) -> str:
    """A code's content for a diagnostic line: escaped (inert) and cut to `limit` chars.

    Never use this for a token on a kiosk screen or in a log: use `token_tail`.
    """
    text = raw.decode("utf-8", errors="backslashreplace") if isinstance(raw, bytes) else raw
    escaped = escape_text(text)
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "…"
