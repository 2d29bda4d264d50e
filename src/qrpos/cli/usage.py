"""What every command does with a malformed command line, and with text it prints.

* A usage error (an unknown option, a missing or malformed value) exits 64 (sysexits'
  EX_USAGE) with one message on stderr, folded to 80 columns (a Pi's console; the lines
  after the first indented by two): never a traceback, never the code of a business
  outcome such as 2 "declined". Option values are checked by the `type=` functions
  below while parsing, so a command's own code only ever sees well-formed values.
* Everything a command prints goes through `redact.terminal_safe` (`safe_output`):
  service text, history rows and file names cannot drive the installer's terminal.
* Each command's `--help` (in the configured language: `locales/*/help.toml`) ends with
  its exit codes (`help.exit.*`, also in the README).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import textwrap
import unicodedata
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any, NoReturn, TextIO
from urllib.parse import urlsplit

from qrpos import spec
from qrpos.errors import QrposError
from qrpos.present.format import format_mnt
from qrpos.present.i18n import t
from qrpos.redact import terminal_safe

EXIT_USAGE = 64
#: a usage error is folded to a Pi's console, whatever the terminal it is typed at
USAGE_WIDTH = 80
NBSP = "\u00a0"
_LOW, _HIGH = format_mnt(spec.AMOUNT_MIN_MNT), format_mnt(spec.AMOUNT_MAX_MNT)


class UsageError(QrposError, argparse.ArgumentTypeError):
    """A malformed option value; the message says what is expected (never the value)."""


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, its lines folded between words only: an option or a path is never
    cut at its hyphen (`--state-` on one line and `dir` on the next read as two words, and
    a Mongolian help showed a Latin word "dir" of its own)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(
            " ".join(text.split()), width, break_on_hyphens=False, break_long_words=False
        )


class UsageParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit 64 (subparsers inherit it), and
    whose help is folded between words (`HelpFormatter`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print `prog: message (see prog --help)`, folded to 80 columns, and exit with
        EX_USAGE."""
        # escaped before folding: a control character escaped is six columns wide
        line = terminal_safe(" ".join(message.split()))
        # the command's name and the pointer to --help are never broken across lines (no-break
        # spaces while folding); only the message folds
        prog = self.prog.replace(" ", NBSP)
        before, after = t("cli.usage.see_help", prog=prog, message="\x00").split("\x00", 1)
        gap = after[: len(after) - len(after.lstrip())]
        said = before + line + gap + after.lstrip().replace(" ", NBSP)
        said = fold(said).replace(NBSP, " ")
        sys.stderr.write(terminal_safe(said + "\n"))
        sys.exit(EXIT_USAGE)


def cells(text: str) -> int:
    """Columns `text` takes on a console (a wide East Asian character takes two, a
    combining mark none: it sits on the letter before it)."""
    return sum(_cell(c) for c in text)


def _cell(c: str) -> int:
    if unicodedata.category(c) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(c) in "WF" else 1


def fold(text: str, width: int = USAGE_WIDTH, indent: str = "  ", *, cut: bool = True) -> str:
    """`text` in lines of at most `width` columns, broken at spaces, the lines after the
    first starting with `indent`. A word wider than a line is cut when `cut` (argparse's
    errors: their words are the catalogue's, the value they may quote is garbage), else
    left whole on a line of its own (a path a person copies)."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        joined = f"{line} {word}" if line else (indent if lines else "") + word
        if cells(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line)
        line = indent + word
        while cut and cells(line) > width:
            end = len(line)
            while cells(line[:end]) > width or _cell(line[end : end + 1] or " ") == 0:
                end -= 1  # a combining mark stays with its letter
            lines.append(line[:end])
            line = indent + line[end:]
    lines.append(line)
    return "\n".join(lines)


#: argparse's own words (its gettext msgids) -> our catalogue's key for each: a usage
#: error and `--help` are told in the configured language, like everything else.
ARGPARSE_WORDS: dict[str, str] = {
    "the following arguments are required: %s": "cli.argparse.required",
    "unrecognized arguments: %s": "cli.argparse.unrecognized",
    "argument %(argument_name)s: %(message)s": "cli.argparse.argument",
    "invalid choice: %(value)r (choose from %(choices)s)": "cli.argparse.invalid_choice",
    "expected one argument": "cli.argparse.expected_one",
    "expected at most one argument": "cli.argparse.expected_at_most_one",
    "expected at least one argument": "cli.argparse.expected_at_least_one",
    "invalid %(type)s value: %(value)r": "cli.argparse.invalid_value",
    "one of the arguments %s is required": "cli.argparse.one_of_required",
    "not allowed with argument %s": "cli.argparse.not_allowed_with",
    "ignored explicit argument %r": "cli.argparse.ignored_explicit",
    "ambiguous option: %(option)s could match %(matches)s": "cli.argparse.ambiguous",
    "usage: ": "help.argparse.usage",
    "positional arguments": "help.argparse.positionals",
    "options": "help.argparse.options",
    "show this help message and exit": "help.argparse.help",
}


def argparse_words(message: str) -> str:
    """argparse's message `message` in the current language (as it is if it has none)."""
    key = ARGPARSE_WORDS.get(message)
    return t(key) if key else message


def speak_argparse() -> None:
    """Have argparse tell its errors through the catalogues (its `_` and `ngettext`)."""
    argparse._ = argparse_words  # type: ignore[attr-defined]
    argparse.ngettext = lambda one, many, n: argparse_words(one if n == 1 else many)  # type: ignore[attr-defined]


def text(value: str) -> str:
    """Option text: valid UTF-8 (argv bytes that are not arrive as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(t("cli.usage.not_utf8")) from None
    if "\x00" in value:
        raise UsageError(t("cli.usage.nul"))
    return value


def tx_id(value: str) -> str:
    """A transaction id as the service writes it: `tx_` then letters and digits."""
    text(value)
    if not spec.TX_ID_RE.match(value):
        raise UsageError(t("cli.usage.not_tx_id"))
    return value


def qr_token(value: str) -> str:
    """A token as scanned: its exact text, which must be valid UTF-8 (never repaired), and
    a wallet token by the kiosk's own rule (`qrpos.scanner.tokens.classify`): what the
    kiosk refuses on screen, the command refuses with the same words, before anything is
    stored or sent."""
    text(value)
    if not value:
        raise UsageError(t("cli.usage.empty_token"))
    from qrpos.present.outcome import refusal_words
    from qrpos.scanner.tokens import Refusal, classify

    read = classify(value.encode("utf-8"))
    if isinstance(read, Refusal):
        raise UsageError(refusal_words(str(read.code), read.reason))
    return value


def amount_mnt(value: str) -> int:
    """Whole tugrik within the spec's range, written as plain digits."""
    digits = value.strip()
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 9:
        raise UsageError(t("cli.usage.not_tugrik", low=_LOW, high=_HIGH))
    amount = int(digits)
    if not spec.AMOUNT_MIN_MNT <= amount <= spec.AMOUNT_MAX_MNT:
        raise UsageError(t("cli.usage.amount_range", low=_LOW, high=_HIGH))
    return amount


def seconds(value: str) -> float:
    """A positive, finite number of seconds (not nan, not inf)."""
    try:
        number = float(text(value))
    except ValueError:
        raise UsageError(t("cli.usage.not_seconds")) from None
    if not (math.isfinite(number) and number > 0):
        raise UsageError(t("cli.usage.positive_seconds"))
    return number


def offset_seconds(value: str) -> float:
    """A finite number of seconds, either sign (a clock ahead or behind)."""
    try:
        number = float(text(value))
    except ValueError:
        raise UsageError(t("cli.usage.not_seconds")) from None
    if not math.isfinite(number):
        raise UsageError(t("cli.usage.finite_seconds"))
    return number


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """A `type=` for a plain integer in ``low..high``."""

    def parse(value: str) -> int:
        digits = value.strip()
        body = digits[1:] if digits[:1] in "+-" else digits
        if not (body.isascii() and body.isdigit()) or len(body) > 12:
            raise UsageError(t("cli.usage.not_whole", low=low, high=high))
        number = int(digits)
        if not low <= number <= high:
            raise UsageError(t("cli.usage.out_of_range", low=low, high=high))
        return number

    parse.__name__ = "integer"
    return parse


def local_day(value: str) -> date:
    """A local day written ``YYYY-MM-DD``."""
    from qrpos.reports.localday import parse_day

    try:
        return parse_day(text(value))
    except ValueError:
        raise UsageError(t("cli.usage.not_day")) from None


def when(value: str) -> str:
    """A local day (``YYYY-MM-DD``) or an RFC 3339 date-time, kept as written (the command
    reads a day as its start or its end)."""
    from qrpos.reports.localday import parse_day
    from qrpos.service.models import parse_rfc3339

    text(value)
    try:
        parse_day(value)
    except ValueError:
        try:
            parse_rfc3339(value)
        except ValueError:
            raise UsageError(t("cli.usage.not_when")) from None
    return value


def base_url(value: str) -> str:
    """An http(s) URL with a host; which scheme is allowed where is the client's rule."""
    text(value)
    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise UsageError(t("cli.usage.not_url")) from None
    if parts.scheme not in ("https", "http") or not host:
        raise UsageError(t("cli.usage.not_http_url"))
    return value


def username(value: str) -> str:
    """A terminal username: `term_` and 8 letters or digits."""
    if not spec.USERNAME_RE.match(text(value)):
        raise UsageError(t("cli.usage.not_username", prefix=spec.USERNAME_PREFIX))
    return value


def read_stdin_line(stream: TextIO | None = None) -> str:
    """The first line of stdin without its line ending; `UsageError` if not UTF-8."""
    stream = stream or sys.stdin
    raw = stream.buffer.readline() if hasattr(stream, "buffer") else stream.readline()
    if isinstance(raw, str):
        return text(raw).rstrip("\r\n")
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise UsageError(t("cli.usage.stdin_not_utf8")) from None


class _SafeStream(io.TextIOBase):
    """A text stream that writes through `terminal_safe` to the stream it wraps.

    It holds no buffer and does not own the stream it wraps: closing it closes only the
    wrapper and flushes nothing. (A logging handler made during a command keeps it past
    `safe_output`; it is closed by its finalizer when collected, often after the stream
    it wraps was closed, a test's captured output or a pipe at exit. `io.IOBase.close`
    flushed that stream then, and its `ValueError` was raised from `__del__`: an
    "Exception ignored in" on Python 3.13, pytest's PytestUnraisableExceptionWarning.)
    """

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self._inner = inner
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True

    def write(self, s: str) -> int:
        self._inner.write(terminal_safe(s))
        return len(s)

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._inner.encoding


@contextlib.contextmanager
def safe_output(enabled: bool = True) -> Iterator[None]:
    """Route stdout and stderr through `terminal_safe` for the duration."""
    if not enabled:
        yield
        return
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _SafeStream(saved[0]), _SafeStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
