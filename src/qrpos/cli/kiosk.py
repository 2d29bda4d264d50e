"""`qrpos run` (the production kiosk) and `qrpos demo` (the kiosk on an embedded sandbox).

Textual is imported only when one of these commands runs, so `qrpos --help` and the
headless commands stay light. The kiosk draws its first screen before the sandbox, the
outbox, the camera and the client are built (they load in a thread worker: see
`qrpos.kiosk`). While the kiosk owns the terminal, logs go to the journal (under
systemd) or to `kiosk.log` in the state dir, never onto the screen.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qrpos.cli.common import (
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    SETUP_ERRORS,
    config_from_args,
    fail,
)
from qrpos.config import Config
from qrpos.journal import JournalHandler
from qrpos.present.i18n import t
from qrpos.present.words import error_words

LOG_FILE = "kiosk.log"

log = logging.getLogger("qrpos.kiosk")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("run", help=t("help.run.summary"))
    p.set_defaults(func=run)
    q: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help=t("help.demo.summary"),
        description=t("help.demo.about"),
    )
    q.add_argument(
        "--keep-state",
        action="store_true",
        help=t("help.demo.keep_state"),
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


def _startup_failed(error: BaseException | None) -> int | None:
    """The exit code for a kiosk whose services could not be built (None: they were)."""
    if error is None:
        return None
    if isinstance(error, SETUP_ERRORS):
        return fail(error)
    log.error("kiosk stopped", exc_info=error)
    # the message of LedgerError/CameraUnavailable names the fix
    return fail(t("cli.kiosk.stopped", why=error_words(error)), EXIT_LOCAL_ERROR)


#: where the demo keeps what a person chose (its language), and its outbox with --keep-state
DEMO_HOME = Path("~/.local/state/qrpos-demo")


def demo_config(args: argparse.Namespace, temp_dir: Callable[[], Path]) -> Config:
    """The demo's settings: those `qrpos run` reads (`config_from_args`: the command line,
    ``QRPOS_*``, the config file), with the demo's own where it must have them.

    Everything the till drives is the person's: `[customer_display]` and
    ``QRPOS_CUSTOMER_DISPLAY``, `[scanner] handheld`, `[printer]` and ``QRPOS_PRINTER``,
    `[sound]`, `[owner] pin_screens`, the language. The demo's own: the service (its
    sandbox and demo terminal, whatever `base_url`, `username` or the pairing say; the
    sandbox answers in-process, so `request_timeout` is its own too) and the camera (the
    virtual phone, whatever `[scanner] source`; `decoder` is the person's).

    The outbox goes to `--state-dir` or ``QRPOS_STATE_DIR`` when one is given, to
    ~/.local/state/qrpos-demo with ``--keep-state``, else to a folder thrown away on exit
    (`temp_dir`); never to the `state_dir` of the file or systemd's ``$STATE_DIRECTORY``,
    the till's own outbox, which demo sales must not join. The language chosen with `L`
    is remembered in ~/.local/state/qrpos-demo either way; a ``--language`` on the command
    line wins over it. The end-of-day CSV is suggested in the home folder, never in a
    folder deleted on exit. Slips print on the printer the settings name, else on the
    demo's virtual one (shown on screen). Raises a `SETUP_ERRORS` one, as `qrpos run`
    does, when the settings cannot be used.
    """
    loaded = config_from_args(args)
    home = DEMO_HOME.expanduser()
    explicit = bool(getattr(args, "state_dir", None) or os.environ.get("QRPOS_STATE_DIR"))
    if explicit:
        state_dir = loaded.state_dir  # the option, else QRPOS_STATE_DIR (load_config's order)
    elif args.keep_state:
        state_dir = home
    else:
        state_dir = temp_dir()
    return dataclasses.replace(
        loaded,
        state_dir=state_dir,
        settings_dir=state_dir if explicit or args.keep_state else home,
        export_dir=Path.home(),
        # the demo's sandbox is the service (`qrpos.kiosk.demo` sets both when it starts)
        base_url=None,
        base_url_from=None,
        username=None,
    )


def demo(args: argparse.Namespace) -> int:
    """Run the kiosk against the embedded sandbox and the virtual phone."""
    import tempfile

    from qrpos.kiosk.launch import demo_factory, run_kiosk

    with contextlib.ExitStack() as stack:

        def temp_dir() -> Path:
            return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="qrpos-demo-")))

        try:
            config = demo_config(args, temp_dir)
        except SETUP_ERRORS as exc:
            return fail(exc)
        _logs_off_screen(config.state_dir)
        error = run_kiosk(config, demo_factory(config))
    return _startup_failed(error) or EXIT_OK


def run(args: argparse.Namespace) -> int:
    """The production kiosk: config, stored credentials, the configured camera."""
    try:
        # no base URL yet (a fresh card): the kiosk opens on its pairing screen, which asks
        config = config_from_args(args)
    except SETUP_ERRORS as exc:
        return fail(exc)
    _logs_off_screen(config.state_dir)

    from qrpos.kiosk.launch import production_factory, run_kiosk

    try:
        error = run_kiosk(config, production_factory(config))
    except Exception as exc:
        log.exception("kiosk stopped")
        return fail(t("cli.kiosk.stopped", why=error_words(exc)), EXIT_LOCAL_ERROR)
    code = _startup_failed(error) or EXIT_OK
    from qrpos.kiosk.refusal import hold_refusal

    hold_refusal(error, error_words(error) if error is not None else "")
    return code
