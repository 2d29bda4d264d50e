"""How secrets and tokens may appear in logs, on screen and in exception text.

The terminal password never appears anywhere; a QR token appears only as its last four
characters, escaped so that control characters or markup in it stay inert.
"""

from __future__ import annotations

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
