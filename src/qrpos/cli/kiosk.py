"""`qrpos run` (the production kiosk) and `qrpos demo` (the kiosk on an embedded sandbox).

Textual is imported only when one of these commands runs, so `qrpos --help` and the
headless commands stay light. The kiosk draws its first screen before the sandbox, the
outbox, the camera and the client are built (they load in a thread worker: see
`qrpos.tui.startup`). While the kiosk owns the terminal, logs go to the journal (under
systemd) or to `kiosk.log` in the state dir, never onto the screen.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qrpos.cli.common import (
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    SETUP_ERRORS,
    config_from_args,
    fail,
)
from qrpos.journal import JournalHandler

if TYPE_CHECKING:
    from qrpos.config import Config
    from qrpos.tui.app import KioskApp
    from qrpos.tui.services import KioskServices
    from qrpos.tui.startup import ContextStarter

LOG_FILE = "kiosk.log"

log = logging.getLogger("qrpos.kiosk")


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
    """Keep the journal handler `configure_logging` installed under systemd
    (QRPOS_LOG_TARGET=journal); otherwise log to a file in the state dir."""
    root = logging.getLogger()
    if any(isinstance(h, JournalHandler) for h in root.handlers):
        # under the unit stderr is the kiosk's tty: no file, no stream, only the journal
        return
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


def _run_kiosk(
    config: Config,
    factory: Callable[[Callable[[str], None]], contextlib.AbstractContextManager[KioskServices]],
) -> KioskApp:
    """Run the kiosk until it exits; its services are built by `factory` after the
    first screen is drawn and stopped when the app has exited."""
    from qrpos.tui.app import KioskApp
    from qrpos.tui.services import KioskServices
    from qrpos.tui.startup import ContextStarter

    starter: ContextStarter = ContextStarter(factory)
    try:
        app = KioskApp(KioskServices(config=config), starter=starter)
        app.run()
    finally:
        starter.close()
    return app


def _startup_failed(app: KioskApp) -> int | None:
    """The exit code for a kiosk whose services could not be built (None: they were)."""
    error = app.startup_error
    if error is None:
        return None
    if isinstance(error, SETUP_ERRORS):
        return fail(str(error))
    log.error("kiosk stopped", exc_info=error)
    # the message of LedgerError/CameraUnavailable names the fix
    return fail(f"the kiosk stopped: {error}", EXIT_LOCAL_ERROR)


@contextlib.contextmanager
def _demo_services(
    state_dir: Path, language: str, on_step: Callable[[str], None]
) -> Iterator[KioskServices]:
    from qrpos.tui.demo import demo_world

    with demo_world(state_dir=state_dir, language=language, on_step=on_step) as world:
        yield world.services


def demo(args: argparse.Namespace) -> int:
    """Run the kiosk against the embedded sandbox and the virtual phone."""
    import tempfile

    from qrpos.config import Config

    language = getattr(args, "language", None) or "mn"
    with contextlib.ExitStack() as stack:
        if args.keep_state:
            state_dir = Path.home() / ".local" / "state" / "qrpos-demo"
        else:
            state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="qrpos-demo-")))
        _logs_off_screen(state_dir)
        app = _run_kiosk(
            Config(state_dir=state_dir, language=language),
            lambda on_step: _demo_services(state_dir, language, on_step),
        )
    return _startup_failed(app) or EXIT_OK


def run(args: argparse.Namespace) -> int:
    """The production kiosk: config, stored credentials, the configured camera."""
    try:
        config = config_from_args(args)
        if not config.base_url:
            config.require_service()  # ConfigError naming the setting, before any screen
    except SETUP_ERRORS as exc:
        return fail(str(exc))
    _logs_off_screen(config.state_dir)

    def services(
        on_step: Callable[[str], None],
    ) -> contextlib.AbstractContextManager[KioskServices]:
        from qrpos.tui.production import production_services

        return production_services(config, on_step)

    try:
        app = _run_kiosk(config, services)
    except Exception as exc:
        log.exception("kiosk stopped")
        return fail(f"the kiosk stopped: {exc}", EXIT_LOCAL_ERROR)
    return _startup_failed(app) or EXIT_OK
