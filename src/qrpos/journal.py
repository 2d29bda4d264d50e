"""Logging straight into the systemd journal, without libsystemd.

Under `systemd/qrpos.service` both stdout and stderr are the kiosk's screen (Textual
draws on stderr), so a log line written there would land on the cashier's display.
`configure_logging` sends records to the journal's native socket instead when the unit
sets ``QRPOS_LOG_TARGET=journal``; anywhere else logging stays on stderr.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

JOURNAL_SOCKET = "/run/systemd/journal/socket"
LOG_TARGET_ENV = "QRPOS_LOG_TARGET"
SYSLOG_IDENTIFIER = "qrpos"

# logging levels -> syslog priorities (journal's PRIORITY=)
_PRIORITIES = ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4), (logging.INFO, 6))


def _priority(levelno: int) -> int:
    for level, priority in _PRIORITIES:
        if levelno >= level:
            return priority
    return 7


def _field(name: str, value: str) -> bytes:
    """One field of the native protocol; the binary form when the value has a newline."""
    data = value.encode("utf-8", errors="replace")
    if b"\n" not in data:
        return name.encode("ascii") + b"=" + data + b"\n"
    return name.encode("ascii") + b"\n" + len(data).to_bytes(8, "little") + data + b"\n"


class JournalHandler(logging.Handler):
    """A logging handler speaking the journal's native datagram protocol."""

    def __init__(self, address: str = JOURNAL_SOCKET, identifier: str = SYSLOG_IDENTIFIER):
        super().__init__()
        self.address = address
        self.identifier = identifier
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    def emit(self, record: logging.LogRecord) -> None:
        """Send one record; a journal that is gone must never break the till."""
        try:
            message = self.format(record)
            datagram = b"".join(
                (
                    _field("MESSAGE", message),
                    _field("PRIORITY", str(_priority(record.levelno))),
                    _field("SYSLOG_IDENTIFIER", self.identifier),
                    _field("LOGGER", record.name),
                    _field("CODE_FUNC", record.funcName or ""),
                    _field("CODE_LINE", str(record.lineno)),
                )
            )
            self._sock.sendto(datagram, self.address)
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        """Close the socket with the handler."""
        self._sock.close()
        super().close()


def configure_logging(level: int, env: Mapping[str, str] | None = None) -> logging.Handler:
    """Root logging to the journal when ``QRPOS_LOG_TARGET=journal``, else to stderr."""
    env = os.environ if env is None else env
    handler: logging.Handler
    if env.get(LOG_TARGET_ENV) == "journal" and Path(JOURNAL_SOCKET).exists():
        handler = JournalHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    return handler
