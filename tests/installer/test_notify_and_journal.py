"""sd_notify and the journal handler speak the real wire protocols over real sockets."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from qrpos import journal, notify


@pytest.fixture
def dgram_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    yield sock, path
    sock.close()


def test_ready_and_watchdog_reach_the_notify_socket(
    dgram_socket: tuple[socket.socket, str],
) -> None:
    sock, path = dgram_socket
    env = {"NOTIFY_SOCKET": path}
    assert notify.ready("first screen drawn", env=env)
    assert sock.recv(4096) == b"READY=1\nSTATUS=first screen drawn"
    assert notify.watchdog_ping(env=env)
    assert sock.recv(4096) == b"WATCHDOG=1"


def test_extend_start_speaks_microseconds_from_now(
    dgram_socket: tuple[socket.socket, str],
) -> None:
    sock, path = dgram_socket
    assert notify.extend_start(90, env={"NOTIFY_SOCKET": path})
    assert sock.recv(4096) == b"EXTEND_TIMEOUT_USEC=90000000"
    assert notify.extend_start(0.0000001, env={"NOTIFY_SOCKET": path})
    assert sock.recv(4096) == b"EXTEND_TIMEOUT_USEC=1"  # 0 would mean nothing to systemd
    assert notify.extend_start(90, env={}) is False


def test_notify_is_a_no_op_outside_systemd() -> None:
    assert notify.ready(env={}) is False
    assert notify.watchdog_period_s(env={}) is None


def test_watchdog_period_is_half_of_watchdog_usec() -> None:
    assert notify.watchdog_period_s(env={"WATCHDOG_USEC": "30000000"}) == 15.0


def _parse_native(datagram: bytes) -> dict[str, str]:
    fields: dict[str, str] = {}
    rest = datagram
    while rest:
        head, _sep, tail = rest.partition(b"\n")
        if b"=" in head:
            key, _, value = head.partition(b"=")
            fields[key.decode()] = value.decode()
            rest = tail
        else:
            size = int.from_bytes(tail[:8], "little")
            fields[head.decode()] = tail[8 : 8 + size].decode()
            rest = tail[8 + size + 1 :]
    return fields


def test_journal_handler_sends_native_fields(dgram_socket: tuple[socket.socket, str]) -> None:
    sock, path = dgram_socket
    handler = journal.JournalHandler(address=path)
    logger = logging.getLogger("qrpos.test.journal")
    logger.setLevel(logging.INFO)  # whatever an in-process command left on the root logger
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("paired %s\nsecond line", "term_ab12cd34")
    finally:
        logger.removeHandler(handler)
        handler.close()
    fields = _parse_native(sock.recv(65536))
    assert fields["MESSAGE"] == "paired term_ab12cd34\nsecond line"
    assert fields["PRIORITY"] == "4"
    assert fields["SYSLOG_IDENTIFIER"] == "qrpos"
    assert fields["LOGGER"] == "qrpos.test.journal"


def test_logging_stays_on_stderr_unless_the_unit_asks_for_the_journal() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        handler = journal.configure_logging(logging.INFO, env={})
        assert isinstance(handler, logging.StreamHandler)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
