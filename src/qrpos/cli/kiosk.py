"""`qrpos run` (the production kiosk) and `qrpos demo` (the kiosk on an embedded sandbox).

Textual is imported only when one of these commands runs, so `qrpos --help` and the
headless commands stay light. While the kiosk owns the terminal, logs go to the journal
(under systemd) or to `kiosk.log` in the state dir, never onto the screen.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from qrpos.cli.common import (
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    SETUP_ERRORS,
    config_from_args,
    fail,
)

LOG_FILE = "kiosk.log"


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "run", help="the kiosk on this terminal (camera per [scanner] in the config)"
    )
    p.set_defaults(func=run)
    q: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help="the kiosk on an embedded sandbox and a virtual camera; needs nothing else",
        description="Keys in the demo: p = the next customer shows the phone; "
        "d / e / l = the next charge loses its reply / gets HTTP 500 / gets HTTP 429.",
    )
    q.add_argument(
        "--keep-state",
        action="store_true",
        help="keep the outbox in ~/.local/state/qrpos-demo instead of a temp dir",
    )
    q.set_defaults(func=demo)


def _logs_off_screen(state_dir: Path) -> None:
    """Send logging to the journal (systemd, stderr not a tty) or a file in the state dir."""
    root = logging.getLogger()
    under_journal = bool(os.environ.get("JOURNAL_STREAM")) and not sys.stderr.isatty()
    if under_journal:
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(state_dir / LOG_FILE, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for old in list(root.handlers):
        if isinstance(old, logging.StreamHandler) and not isinstance(old, logging.FileHandler):
            root.removeHandler(old)
    root.addHandler(handler)


def demo(args: argparse.Namespace) -> int:
    """Run the kiosk against the embedded sandbox and the virtual phone."""
    from qrpos.tui.app import KioskApp
    from qrpos.tui.demo import demo_world

    language = getattr(args, "language", None) or "mn"
    state_dir: Path | None = None
    if args.keep_state:
        state_dir = Path.home() / ".local" / "state" / "qrpos-demo"
    with demo_world(state_dir=state_dir, language=language) as world:
        _logs_off_screen(world.services.config.state_dir)
        KioskApp(world.services).run()
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    """The production kiosk: config, stored credentials, the configured camera."""
    from qrpos.tui.production import production_services

    try:
        config = config_from_args(args)
    except SETUP_ERRORS as exc:
        return fail(str(exc))
    _logs_off_screen(config.state_dir)
    from qrpos.tui.app import KioskApp

    try:
        with production_services(config) as services:
            KioskApp(services).run()
    except SETUP_ERRORS as exc:
        return fail(str(exc))
    except Exception as exc:  # the message of LedgerError/CameraUnavailable names the fix
        logging.getLogger("qrpos.kiosk").exception("kiosk stopped")
        return fail(f"the kiosk stopped: {exc}", EXIT_LOCAL_ERROR)
    return EXIT_OK
