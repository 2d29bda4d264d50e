"""`qrpos`: one console entry point, a subcommand per job (see `qrpos --help`).

Each subcommand lives in its own module of this package, which exposes
``register(subparsers)``; the parser it adds sets ``func(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from qrpos import __version__
from qrpos.cli.common import add_global_options, as_state_owner, fail, speak_before_parsing
from qrpos.cli.usage import (
    EXIT_USAGE,
    UsageError,
    UsageParser,
    safe_output,
    speak_argparse,
)
from qrpos.errors import QrposError
from qrpos.journal import configure_logging
from qrpos.present.i18n import t

#: command -> the module that registers it, in the order of `qrpos --help`
COMMANDS = {
    "run": "kiosk",
    "demo": "kiosk",
    "pair": "pair",
    "charge": "charge",
    "reverse": "reverse",
    "outbox": "outbox",
    "history": "history",
    "report": "report",
    "prices": "prices",
    "print": "printer",
    "display": "display",
    "cashier": "shift",
    "shift": "shift",
    "decode": "decode",
    "doctor": "doctor",
    "verify": "verify",
    "metrics": "metrics",
    "simulator": "simulator",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))
#: global options that take a value (so the word after them is not a command)
_VALUED_OPTIONS = frozenset(
    {"--config", "--base-url", "--username", "--state-dir", "--request-timeout", "--language"}
    | {"--log-level"}
)


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line, if one is (before any parsing)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in _VALUED_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with `only` the parser of that one command.

    Loading just the chosen command's module keeps start-up light: the kiosk draws its
    first screen without importing the scanner, the reports or the sandbox first.
    """
    parser = UsageParser(
        prog="qrpos",
        description=t("help.about"),
    )
    parser.add_argument(
        "--version", action="version", version=f"qrpos {__version__}", help=t("help.version")
    )
    add_global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = (COMMANDS[only],) if only in COMMANDS else COMMAND_MODULES
    for name in modules:
        module = importlib.import_module(f"qrpos.cli.{name}")
        module.register(sub)
    for name, subparser in sub.choices.items():
        add_global_options(subparser, on_subcommand=True)
        subparser.epilog = t("help.exit_codes", codes=t(f"help.exit.{name}"))
    return parser


#: commands that own the terminal (Textual draws with escape sequences of its own)
_DRAWS_THE_SCREEN = frozenset({"run", "demo"})
#: commands whose warnings go to a log someone reads later (the journal, a file); the
#: others speak to a person, who gets their own progress lines, not a retry's warning
_LOGS_WARNINGS = frozenset({"run", "demo", "simulator"})


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, then run one command; returns its exit code (64 for a usage error)."""
    words = list(sys.argv[1:] if argv is None else argv)
    command = chosen_command(words)
    speak_before_parsing(words)  # a usage error is told in the configured language
    speak_argparse()
    with safe_output(enabled=command not in _DRAWS_THE_SCREEN):
        try:
            parser = build_parser(only=command)
            args = parser.parse_args(words)
        except SystemExit as exc:  # --help, --version (0) or a usage error (64)
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        # the journal under systemd (QRPOS_LOG_TARGET=journal), stderr elsewhere
        level = args.log_level or ("warning" if args.command in _LOGS_WARNINGS else "error")
        configure_logging(getattr(logging, level.upper(), logging.WARNING))
        try:
            with as_state_owner(args.command, args):
                code: int = args.func(args)
        except UsageError as exc:
            return fail(exc, EXIT_USAGE)
        except QrposError as exc:  # on purpose, for a person; a bug stays a traceback
            return fail(exc)
        except KeyboardInterrupt:
            print(t("cli.interrupted"), file=sys.stderr)
            return 130
    return code


def _entry() -> None:  # pragma: no cover - console script shim
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
