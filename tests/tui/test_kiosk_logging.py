"""While the kiosk owns the terminal, logs never reach the screen: under systemd they go
to the journal handler `configure_logging` installed (and nowhere else), elsewhere to
`kiosk.log` in the state dir."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from qrpos.cli.kiosk import LOG_FILE, _logs_off_screen
from qrpos.journal import JournalHandler, configure_logging


@pytest.fixture
def root_handlers(monkeypatch: pytest.MonkeyPatch) -> Iterator[logging.Logger]:
    """The root logger, restored afterwards; JOURNAL_STREAM unset (pytest is no unit)."""
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    yield root
    for handler in root.handlers:
        if handler not in saved:
            handler.close()
    root.handlers[:] = saved
    root.setLevel(level)


def test_under_systemd_the_journal_handler_is_kept_and_no_file_is_written(
    tmp_path: Path, root_handlers: logging.Logger
) -> None:
    journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journal.bind(str(tmp_path / "journal.sock"))
    journal.settimeout(5)
    # what configure_logging installs for QRPOS_LOG_TARGET=journal (at a test socket)
    handler = JournalHandler(address=str(tmp_path / "journal.sock"))
    root_handlers.handlers[:] = [handler]
    root_handlers.setLevel(logging.INFO)
    state_dir = tmp_path / "state"

    _logs_off_screen(state_dir)

    assert root_handlers.handlers == [handler]
    assert not (state_dir / LOG_FILE).exists()
    logging.getLogger("qrpos.tui").info("sale #7 ended approved")
    datagram = journal.recv(65536)
    assert b"MESSAGE=sale #7 ended approved\n" in datagram
    journal.close()


def test_elsewhere_logs_go_to_the_state_dir_file_and_not_to_stderr(
    tmp_path: Path, root_handlers: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(logging.INFO, env={})  # not under the unit: a stderr handler
    _logs_off_screen(tmp_path)

    logging.getLogger("qrpos.tui").warning("camera lost")
    for handler in root_handlers.handlers:
        handler.flush()
    assert not any(
        isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
        for h in root_handlers.handlers
    )
    assert "camera lost" in (tmp_path / LOG_FILE).read_text(encoding="utf-8")
    assert "camera lost" not in capsys.readouterr().err


def test_journal_asked_for_but_unreachable_still_keeps_logs_off_the_screen(
    tmp_path: Path, root_handlers: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    # QRPOS_LOG_TARGET=journal with no journal socket: configure_logging falls back to
    # stderr, which under the unit is the cashier's screen; the file takes over
    root_handlers.handlers[:] = [logging.StreamHandler()]
    _logs_off_screen(tmp_path)
    logging.getLogger("qrpos.tui").error("outbox slow")
    for handler in root_handlers.handlers:
        handler.flush()
    assert "outbox slow" in (tmp_path / LOG_FILE).read_text(encoding="utf-8")
    assert "outbox slow" not in capsys.readouterr().err
