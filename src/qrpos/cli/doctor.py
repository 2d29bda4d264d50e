"""`qrpos doctor`: one table for an installer; each failed line names its fix.

Exit 0 when nothing failed (warnings and skips allowed), 1 when something failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    config_from_args,
    console_width,
    fail,
)
from qrpos.config import ConfigError
from qrpos.doctor import Status, check_name, render_table, run_checks
from qrpos.present.i18n import t
from qrpos.present.words import error_words


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "doctor",
        help=t("help.doctor.summary"),
        description=(t("help.doctor.about")),
    )
    p.add_argument(
        "--camera-seconds",
        type=usage.seconds,
        default=2.0,
        metavar="S",
        help=t("help.doctor.camera_seconds"),
    )
    p.add_argument(
        "--no-camera",
        action="store_true",
        help=t("help.doctor.no_camera"),
    )
    p.add_argument("--json", action="store_true", help=t("help.doctor.json"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run every check and print the table."""
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        return fail(t("cli.doctor.config", message=error_words(exc)))
    if args.camera_seconds <= 0:
        return fail(t("cli.positive", options="--camera-seconds"), EXIT_USAGE)
    checks = asyncio.run(
        run_checks(config, camera_seconds=args.camera_seconds, skip_camera=args.no_camera)
    )
    if args.json:
        print(json.dumps([c.to_json() for c in checks], ensure_ascii=False, indent=2))
    else:
        print(render_table(checks, console_width()))
    failed = [check_name(c) for c in checks if c.status is Status.FAIL]
    if not args.json:
        print()
        names = ", ".join(failed)
        passed = t("cli.doctor.passed")
        print(t("cli.doctor.failed", count=len(failed), names=names) if failed else passed)
    return EXIT_LOCAL_ERROR if failed else EXIT_OK
