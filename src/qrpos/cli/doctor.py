"""`qrpos doctor`: one table for an installer; each failed line names its fix.

Exit 0 when nothing failed (warnings and skips allowed), 1 when something failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from qrpos.cli import usage
from qrpos.cli.common import EXIT_LOCAL_ERROR, EXIT_OK, config_from_args, console_width, fail
from qrpos.config import ConfigError
from qrpos.doctor import Status, check_name, render_table, run_checks
from qrpos.present.i18n import t


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "doctor",
        help="check camera, decoder, storage, clock, credentials and the service",
        description=(
            "Check everything a working kiosk needs and print one line per check; a failed "
            "line says how to fix it. On a kiosk run it as root (sudo) so that it can read "
            "the encrypted credential."
        ),
    )
    p.add_argument(
        "--camera-seconds",
        type=usage.seconds,
        default=2.0,
        metavar="S",
        help="how long to count camera frames (default 2)",
    )
    p.add_argument(
        "--no-camera",
        action="store_true",
        help="skip the camera (e.g. while the kiosk itself is using it)",
    )
    p.add_argument("--json", action="store_true", help="print the checks as a JSON array")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run every check and print the table."""
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        return fail(f"{exc} (fix the configuration, then run doctor again)")
    if args.camera_seconds <= 0:
        return fail("--camera-seconds must be positive")
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
