"""The receipt printer behind a small port of ours: `send(bytes)`, or `PrinterTrouble`
saying why not (off, unplugged, out of paper), in words for any language.

One setting chooses it (`QRPOS_PRINTER`, else `[printer] device`):

* ``usb:VID:PID`` (hex, from `lsusb`): python-escpos over pyusb;
* ``serial:/dev/ttyUSB0`` (``@19200`` for another speed);
* ``tcp:HOST`` or ``tcp:HOST:9100``: a network printer's raw port;
* ``file:PATH``: bytes appended to a file or a device node (``/dev/usb/lp0``; tests);
* ``off`` or nothing: no printer (the default).

Before each slip a printer that can answer is asked for its paper sensor (DLE EOT 4);
"no paper" is trouble, and the slip stays queued (`qrpos.peripherals.printing`). A printer
that has answered that question once and is silent now is trouble too: a network printer
whose mechanism hung while its network card still takes connections would otherwise
swallow the slip, and the slip would be marked printed. One that never answered (some do
not) is printed to without asking, as before: there is nothing to tell it by.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from qrpos.errors import QrposError
from qrpos.said import Said, os_reason, say

log = logging.getLogger("qrpos.printer")

PAPER_WIDTHS = (58, 80)


class PrinterTrouble(QrposError):
    """The slip was not printed; `said` says why (the slip stays queued)."""

    said: Said

    def __init__(self, said: Said) -> None:
        super().__init__(said)


class PrinterSettingError(QrposError, ValueError):
    """A printer setting that names no printer; the message names it."""


def _bad_setting(text: str) -> PrinterSettingError:
    return PrinterSettingError(
        say(
            "printer.bad_setting",
            "printer {setting}: write usb:VID:PID, serial:/dev/ttyUSB0, tcp:HOST:9100, "
            "file:PATH or off",
            setting=repr(text),
        )
    )


class Port(Protocol):
    """Where slips go."""

    name: str

    def send(self, data: bytes) -> None:
        """Print `data` whole, or raise `PrinterTrouble` (nothing is then known printed)."""
        ...

    def probe(self) -> None:
        """Reach the printer and read its paper sensor without printing (`doctor`);
        `PrinterTrouble` says what is wrong."""
        ...


@dataclass
class FilePort:
    """Bytes appended to a file: a device node, or a file a test or the demo reads."""

    path: Path
    name: str = "file"
    #: False: each slip replaces the last (the demo's virtual printer keeps one)
    append: bool = True
    #: True: the slip's text instead of ESC/POS (the demo's virtual printer)
    text: bool = False

    def send(self, data: bytes) -> None:
        try:
            with self.path.open("ab" if self.append else "wb") as out:
                out.write(data)
        except OSError as exc:
            raise PrinterTrouble(
                say(
                    "printer.cannot_write", "{path}: {why}", path=str(self.path), why=os_reason(exc)
                )
            ) from None

    def probe(self) -> None:
        target = self.path if self.path.exists() else self.path.parent
        if not target.exists() or not os.access(target, os.W_OK):
            code = errno.EACCES if target.exists() else errno.ENOENT
            raise PrinterTrouble(
                say(
                    "printer.cannot_write",
                    "{path}: {why}",
                    path=str(self.path),
                    why=os_reason(OSError(code, os.strerror(code))),
                )
            )


class EscposPort:
    """A python-escpos printer (USB, serial, network), opened for each slip and closed
    after it: a printer switched off between slips is found again by the next one."""

    def __init__(self, name: str, make: Callable[[], Any], where: str) -> None:
        self.name = name
        self._make = make
        self.where = where
        #: the printer has answered a paper-sensor question (since the kiosk started)
        self.answers_status = False

    def send(self, data: bytes) -> None:
        self._session(data)

    def probe(self) -> None:
        self._session(None)

    def _session(self, data: bytes | None) -> None:
        """Open the printer, check its paper, send `data` (None: only the check), close."""
        from escpos.exceptions import Error as EscposError

        printer: Any = None
        try:
            printer = self._make()
            printer.open()
        except (EscposError, OSError, ValueError) as exc:
            log.info("printer %s cannot be opened: %s", self.where, exc)
            raise PrinterTrouble(
                say("printer.unreachable", "the printer {where} does not answer", where=self.where)
            ) from None
        try:
            if self.name != "serial":  # a serial printer may be wired without its return line
                self._check_paper(printer)
            if data is not None:
                printer._raw(data)
        except PrinterTrouble:
            raise
        except (EscposError, OSError, ValueError) as exc:
            log.info("printer %s failed mid-slip: %s", self.where, exc)
            raise PrinterTrouble(
                say("printer.lost", "the printer {where} stopped answering", where=self.where)
            ) from None
        finally:
            try:
                printer.close()
            except Exception:  # closing a printer that vanished
                log.debug("printer %s: close failed", self.where, exc_info=True)

    def _check_paper(self, printer: Any) -> None:
        try:
            status = printer.paper_status()
        except (OSError, TimeoutError, ValueError):
            if self.answers_status:  # it used to answer: it is not listening now
                log.info("printer %s answered the paper sensor before, not now", self.where)
                raise PrinterTrouble(
                    say("printer.lost", "the printer {where} stopped answering", where=self.where)
                ) from None
            return  # a printer that never answered status queries: print anyway
        self.answers_status = True
        if status == 0:
            raise PrinterTrouble(say("printer.no_paper", "the printer is out of paper"))
        if status == 1:
            log.info("printer %s: paper is running low", self.where)


def open_port(setting: str | None) -> Port | None:
    """The port `setting` names; None for "off" or nothing; `PrinterSettingError` for a
    setting that names no printer."""
    text = (setting or "").strip()
    if text in ("", "off", "none"):
        return None
    kind, _, rest = text.partition(":")
    if kind == "file" and rest:
        return FilePort(Path(rest))
    if kind == "usb":
        vid, _, pid = rest.partition(":")
        try:
            ids = int(vid, 16), int(pid, 16)
        except ValueError:
            raise _bad_setting(text) from None

        def usb() -> Any:
            from escpos.printer import Usb

            return Usb(*ids, timeout=2000)

        return EscposPort("usb", usb, f"usb {rest}")
    if kind == "serial" and rest:
        device, _, speed = rest.partition("@")
        if speed and not speed.isdigit():
            raise _bad_setting(text)

        def serial() -> Any:
            from escpos.printer import Serial

            return Serial(devfile=device, baudrate=int(speed or 19200), timeout=2)

        return EscposPort("serial", serial, device)
    if kind == "tcp" and rest:
        host, _, port = rest.rpartition(":") if rest.count(":") == 1 else (rest, "", "9100")
        if not port.isdigit():
            raise _bad_setting(text)

        def network() -> Any:
            from escpos.printer import Network

            return Network(host, int(port), timeout=3)

        return EscposPort("tcp", network, f"{host}:{port}")
    raise _bad_setting(text)
