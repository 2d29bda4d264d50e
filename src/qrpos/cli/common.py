"""What every subcommand shares: global options, exit codes, config and client set-up."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shutil
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qrpos import statedir
from qrpos.cli import usage
from qrpos.cli.usage import EXIT_USAGE as EXIT_USAGE
from qrpos.config import Config, ConfigError, load_config
from qrpos.errors import CredentialsMissing, InsecureBaseURL
from qrpos.identity import ClonedStateDir
from qrpos.present.i18n import languages, set_language, t
from qrpos.present.words import error_words
from qrpos.redact import terminal_safe

if TYPE_CHECKING:
    from qrpos.service import TerminalClient

# Exit codes shared by the headless commands (docs/architecture.md).
EXIT_OK = 0
EXIT_LOCAL_ERROR = 1
EXIT_REFUSED = 2
EXIT_UNRESOLVED = 3
EXIT_CREDENTIALS = 4


#: a row's fields on one line from this many columns; below it, the row takes two lines
WIDE_COLUMNS = 128


def console_width() -> int:
    """The console's columns ($COLUMNS, else the terminal's, else 80: a Pi's tty1)."""
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def wrapped(text: str, indent: str = "", first: str | None = None) -> str:
    """`text` folded to the console's width: the first line starts with `first` (the
    indent when None), the next ones with `indent`; words are never cut."""
    return textwrap.fill(
        text,
        width=console_width(),
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def add_global_options(parser: argparse.ArgumentParser, *, on_subcommand: bool = False) -> None:
    """Options every subcommand takes; they override environment and config file.

    They are accepted before and after the subcommand name; on the subcommand they
    default to SUPPRESS so that they never overwrite a value given before it.
    """
    d: dict[str, Any] = {"default": argparse.SUPPRESS} if on_subcommand else {}
    g = parser.add_argument_group(t("help.common.title"))
    g.add_argument("--config", type=Path, help=t("help.common.config"), **d)
    g.add_argument(
        "--base-url",
        type=usage.base_url,
        help=t("help.common.base_url"),
        **d,
    )
    g.add_argument("--username", type=usage.username, help=t("help.common.username"), **d)
    g.add_argument("--state-dir", type=Path, help=t("help.common.state_dir"), **d)
    g.add_argument(
        "--request-timeout", type=usage.seconds, help=t("help.common.request_timeout"), **d
    )
    g.add_argument("--language", choices=("mn", "en"), help=t("help.common.language"), **d)
    g.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        help=t("help.common.log_level"),
        **(d or {"default": None}),
    )


def config_from_args(args: argparse.Namespace) -> Config:
    """Load the configuration with this invocation's options on top, and speak its
    language from here on (every command's words come from the catalogues)."""
    options: dict[str, Any] = {
        "base_url": getattr(args, "base_url", None),
        "username": getattr(args, "username", None),
        "state_dir": getattr(args, "state_dir", None),
        "request_timeout": getattr(args, "request_timeout", None),
        "language": getattr(args, "language", None),
    }
    config = load_config(config_path=getattr(args, "config", None), options=options)
    if options["language"] is not None:
        config = dataclasses.replace(config, language_pinned=True)
    set_language(config.language)
    return config


def _option_value(words: Sequence[str], name: str) -> str | None:
    """The value given to option `name` on the command line (last one wins), unparsed."""
    value = None
    for i, word in enumerate(words):
        if word == name and i + 1 < len(words):
            value = words[i + 1]
        elif word.startswith(name + "="):
            value = word.split("=", 1)[1]
    return value


def speak_before_parsing(words: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """Speak the configured language before the command line is parsed, so that a usage
    error is told in it: `--language` as given, else the environment and the config file
    as every command reads them. When the config file cannot be read, `--language` or
    `QRPOS_LANGUAGE` still chooses (else the default stays), and the command then says
    what is wrong with the file in that language."""
    given = _option_value(words, "--language")
    config = _option_value(words, "--config")
    env = os.environ if env is None else env
    try:
        language = load_config(
            config_path=Path(config) if config else None,
            options={"language": given if given in languages() else None},
            env=env,
        ).language
    except (ConfigError, OSError, ValueError):
        chosen = [w for w in (given, env.get("QRPOS_LANGUAGE")) if w in languages()]
        if not chosen:
            return
        language = chosen[0]
    set_language(language)


def client_from_config(config: Config) -> TerminalClient:
    """A client with the stored password; raises ConfigError / CredentialsMissing /
    InsecureBaseURL with a message meant for the installer."""
    # imported here: httpx and keyring are not needed to parse options or show --help
    from qrpos.credentials import load_password
    from qrpos.service import TerminalClient

    base_url, username = config.require_service()
    password = load_password(username)
    return TerminalClient(base_url, username, password, timeout_s=config.request_timeout_s)


#: commands that never touch the state dir (the demo keeps its own throw-away one)
_NO_STATE_DIR = frozenset({"simulator", "decode", "demo"})
#: root tools that need root for the credential store alone (qrpos.credentials)
_NEED_CREDSTORE = frozenset({"doctor", "verify"})


def as_state_owner(
    command: str, args: argparse.Namespace
) -> contextlib.AbstractContextManager[Any]:
    """Run as root, a command that touches the state dir does so as the dir's owner.

    Permanently for most commands; for doctor and verify, effective ids only, so that
    they can still decrypt the credential store (`statedir.as_root`).
    """
    if os.geteuid() != 0 or command in _NO_STATE_DIR:
        return contextlib.nullcontext()
    try:
        state_dir = config_from_args(args).state_dir
    except SETUP_ERRORS:
        return contextlib.nullcontext()  # the command itself reports the same error
    if command in _NEED_CREDSTORE:
        return statedir.acting_as_state_owner(state_dir)
    statedir.drop_to_state_owner(state_dir)
    return contextlib.nullcontext()


def fail(message: str | BaseException, code: int = EXIT_LOCAL_ERROR) -> int:
    """Print `qrpos: message` to stderr and return the exit code; an error is told in the
    configured language where it was raised with words for one (`qrpos.said`)."""
    text = message if isinstance(message, str) else error_words(message).strip("'\"")
    said = f"qrpos: {text}"
    # a usage error is folded to the console like argparse's own (`usage.fold`)
    folded = usage.fold(terminal_safe(said), cut=False)  # escaped first: then measured
    print(folded if code == EXIT_USAGE else said, file=sys.stderr)
    return code


SETUP_ERRORS = (ConfigError, CredentialsMissing, InsecureBaseURL, ClonedStateDir)


class LandedRefunds:
    """What the outbox knows of the refunds it landed (`qrpos.ledger.refunded_here`), for
    laying over a stale copy of the history (the cache, read offline). The outbox is
    opened at the first question, not before: a command online never reads it. An install
    with no outbox has landed nothing; one whose outbox cannot be read raises
    `LedgerError` (a copy must not be shown paid on a guess). `close()` when done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ledger: Any = None

    def __call__(self, tx_ids: Sequence[str]) -> set[str]:
        from qrpos.ledger import Ledger, refunded_here

        if self._ledger is None:
            if not self.path.exists():
                return set()
            self._ledger = Ledger.open(self.path)
        return refunded_here(self._ledger, tx_ids)

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


@contextlib.contextmanager
def refunds_landed_here(config: Config) -> Iterator[LandedRefunds]:
    """`LandedRefunds` of this install's outbox, closed on the way out."""
    landed = LandedRefunds(config.ledger_path)
    try:
        yield landed
    finally:
        landed.close()
