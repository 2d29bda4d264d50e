"""The token rules: exact strings for vqr_ tokens, clear harmless refusals for the rest."""

from __future__ import annotations

import pytest

from qrpos.scanner import Refusal, RefusalCode, ScannedToken, classify, shorten

from .qrset import PAYLOADS

ACCEPTED = [
    "plain",
    "trailing_space",
    "trailing_newline",
    "trailing_crlf",
    "symbols",
    "long",
    "embedded_tab",
    "non_ascii_utf8",
    "terminal_escape",
    "markup",
]
REFUSED = {
    "leading_space": RefusalCode.NOT_A_TOKEN,
    "url": RefusalCode.URL,
    "foreign_payment": RefusalCode.FOREIGN_PAYMENT,
    "invalid_utf8": RefusalCode.INVALID_UTF8,
    "latin1_byte": RefusalCode.INVALID_UTF8,
}


def test_every_payload_case_is_either_accepted_or_refused() -> None:
    assert set(ACCEPTED) | set(REFUSED) == set(PAYLOADS)


@pytest.mark.parametrize("case", ACCEPTED)
def test_token_is_the_strict_utf8_string_of_the_bytes_untouched(case: str) -> None:
    raw = PAYLOADS[case]
    result = classify(raw)
    assert isinstance(result, ScannedToken)
    assert result.token.encode("utf-8") == raw
    assert result.token == raw.decode("utf-8")


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_non_tokens_are_refused_with_a_message_that_does_not_repeat_the_code(case: str) -> None:
    raw = PAYLOADS[case]
    result = classify(raw)
    assert isinstance(result, Refusal)
    assert result.code is REFUSED[case]
    assert result.reason
    assert raw.decode("utf-8", "replace").strip()[:8] not in result.reason


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"VQR_upper",
        b"vqr",
        b"vqr-dash",
        b"\xef\xbb\xbfvqr_bom",
        b"HTTPS://EXAMPLE.MN",
        b"WWW.x",
    ],
)
def test_near_misses_are_refused_not_repaired(raw: bytes) -> None:
    assert isinstance(classify(raw), Refusal)


def test_token_repr_shows_only_the_last_four_characters() -> None:
    token = ScannedToken("vqr_secretsecret1234")
    assert "secret" not in repr(token)
    assert "1234" in repr(token)


def test_shorten_escapes_control_characters_and_cuts_long_text() -> None:
    shown = shorten(PAYLOADS["terminal_escape"] + b"x" * 50)
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown.startswith("vqr_\\x1b[2J")
    assert len(shown) <= 24 and shown.endswith("…")
    assert "\n" not in shorten(b"vqr_a\nb")
