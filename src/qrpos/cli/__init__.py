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
from qrpos.cli.common import add_global_options
from qrpos.journal import configure_logging

#: modules in the order their commands appear in --help
COMMAND_MODULES = (
    "kiosk",  # run, demo
    "pair",
    "charge",
    "reverse",
    "outbox",
    "history",
    "report",
    "decode",
    "doctor",
    "verify",
    "simulator",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qrpos",
        description="Point-of-sale kiosk that charges meal-benefit wallets by QR code.",
    )
    parser.add_argument("--version", action="version", version=f"qrpos {__version__}")
    add_global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"qrpos.cli.{name}")
        module.register(sub)
    for subparser in sub.choices.values():
        add_global_options(subparser, on_subcommand=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # the journal under systemd (QRPOS_LOG_TARGET=journal), stderr elsewhere
    configure_logging(getattr(logging, str(args.log_level).upper(), logging.WARNING))
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code


def _entry() -> None:  # pragma: no cover - console script shim
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
