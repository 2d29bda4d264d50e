"""How secrets and tokens may appear in logs, on screen and in exception text.

The terminal password never appears anywhere; a QR token appears only as its last four
characters, escaped so that control characters or markup in it stay inert.
"""

from __future__ import annotations

import unicodedata

TOKEN_TAIL_LEN = 4


def token_tail(token: str | bytes) -> str:
    """``…abcd``: the last four characters of a token, escaped for display.

    Control characters, quotes and non-printable code points are shown as Python
    escapes (``\\n``, ``\\x1b``), so a hostile QR cannot drive a terminal or a log.
    """
    if isinstance(token, bytes):
        token = token.decode("utf-8", errors="backslashreplace")
    tail = token[-TOKEN_TAIL_LEN:]
    return "…" + escape_text(tail)


def escape_text(text: str) -> str:
    """Printable characters kept as they are; everything else as a backslash escape."""
    out: list[str] = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def _escape_code_point(ch: str) -> str:
    # JSON's escape syntax (a UTF-16 pair beyond the BMP): valid inside a JSON string
    # and readable to a person, so one filter serves both kinds of output
    units = ch.encode("utf-16-be", errors="surrogatepass")
    return "".join(
        f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2)
    )


#: what a terminal may act on: C0/C1 controls (ESC starts every ANSI/OSC sequence),
#: format characters (bidi overrides, zero-width), line/paragraph separators,
#: lone surrogates and unassigned code points
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})
_KEPT = frozenset("\n\t")


def terminal_safe(text: str) -> str:
    """`text` with every character a terminal could act on shown as a ``\\uXXXX`` escape.

    Newlines and tabs stay (the CLI's own layout); everything else in
    `_UNSAFE_CATEGORIES` is escaped, so service text, a hostile QR or a file name can
    neither move the cursor, set the title (OSC), nor reorder the line (bidi). Printable
    text, Mongolian included, passes unchanged.
    """
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch in _KEPT or ch.isprintable() or unicodedata.category(ch) not in _UNSAFE_CATEGORIES:
            out.append(ch)
        else:
            out.append(_escape_code_point(ch))
    return "".join(out)
