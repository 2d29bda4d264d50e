"""A handheld 2D scanner beside (or instead of) the camera: a USB keyboard wedge read
through evdev, or a serial (CDC-ACM) one through pyserial.

Most handheld scanners are keyboard wedges: they "type" the code and press Enter. Read as
a keyboard by the console, their keystrokes would land in the terminal UI, and the
console's keyboard layout (a Mongolian one maps the Q key to Ф) would change the bytes.
So the kiosk reads the scanner's own input device:

* exclusively (`EVIOCGRAB`): while the kiosk holds it, its keystrokes reach no one else,
  the terminal UI included;
* by key code, through the US layout every scanner types in (HID usage tables): the
  console's layout cannot change a byte. Shift, either one, and Caps Lock are followed.

A serial scanner sends the code's bytes as they are, ended by CR and/or LF; they are
passed on unchanged (invalid UTF-8 is refused by the token rules, never repaired).

Each scan goes to `ScanLoop.handle_scan`: the same rules as the camera's (not a token,
already paid), and one token per arming. A reader whose device vanishes (unplugged)
says so (`state`) and opens it again every few seconds; the sale goes on with the camera.
`KeyDecoder` is sans-I/O: events and "now" in, scans out.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import select
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

log = logging.getLogger("qrpos.scanner.handheld")

# linux/input-event-codes.h
EV_SYN, EV_KEY, EV_MSC = 0x00, 0x01, 0x04
KEY_ENTER, KEY_KPENTER, KEY_TAB = 28, 96, 15
KEY_LEFTSHIFT, KEY_RIGHTSHIFT, KEY_CAPSLOCK = 42, 54, 58
#: struct input_event: a timeval (two native longs), type, code, value
EVENT = struct.Struct("llHHi")
#: _IOW('E', 0x90, int): grab the device for this file alone
EVIOCGRAB = 0x40044590

#: key code -> (unshifted, shifted), the US layout scanners type in
US_KEYS: dict[int, tuple[str, str]] = {
    2: ("1", "!"), 3: ("2", "@"), 4: ("3", "#"), 5: ("4", "$"), 6: ("5", "%"),
    7: ("6", "^"), 8: ("7", "&"), 9: ("8", "*"), 10: ("9", "("), 11: ("0", ")"),
    12: ("-", "_"), 13: ("=", "+"),
    16: ("q", "Q"), 17: ("w", "W"), 18: ("e", "E"), 19: ("r", "R"), 20: ("t", "T"),
    21: ("y", "Y"), 22: ("u", "U"), 23: ("i", "I"), 24: ("o", "O"), 25: ("p", "P"),
    26: ("[", "{"), 27: ("]", "}"),
    30: ("a", "A"), 31: ("s", "S"), 32: ("d", "D"), 33: ("f", "F"), 34: ("g", "G"),
    35: ("h", "H"), 36: ("j", "J"), 37: ("k", "K"), 38: ("l", "L"), 39: (";", ":"),
    40: ("'", '"'), 41: ("`", "~"), 43: ("\\", "|"),
    44: ("z", "Z"), 45: ("x", "X"), 46: ("c", "C"), 47: ("v", "V"), 48: ("b", "B"),
    49: ("n", "N"), 50: ("m", "M"), 51: (",", "<"), 52: (".", ">"), 53: ("/", "?"),
    57: (" ", " "),
    # the numeric keypad (some scanners type digits there)
    55: ("*", "*"), 71: ("7", "7"), 72: ("8", "8"), 73: ("9", "9"), 74: ("-", "-"),
    75: ("4", "4"), 76: ("5", "5"), 77: ("6", "6"), 78: ("+", "+"), 79: ("1", "1"),
    80: ("2", "2"), 81: ("3", "3"), 82: ("0", "0"), 83: (".", "."), 98: ("/", "/"),
}  # fmt: skip
#: the keys that end a scan (scanners end with Enter by default; some with Tab)
TERMINATORS = frozenset({KEY_ENTER, KEY_KPENTER, KEY_TAB})
#: keys a scanner may press that type nothing (modifiers, lock keys)
_SILENT = frozenset({29, 97, 56, 100, 125, 126, 69, 70})
#: a byte that no key types: it marks a scan that had a key we cannot read, so the scan
#: is refused by the token rules instead of being passed on with a character missing
UNREADABLE = b"\xff"
#: longer than any code: a stuck key or a scanner in a loop
MAX_SCAN = 4096
#: a scan whose keys stop this long before its Enter is thrown away (a dropped Enter)
STALE_S = 1.0


@dataclass
class KeyDecoder:
    """Key events in, whole scans out (bytes, without the terminator)."""

    stale_s: float = STALE_S
    _typed: bytearray | None = None
    _shift: int = 0
    _caps: bool = False
    _last: float = 0.0

    def feed(self, type_: int, code: int, value: int, now: float) -> bytes | None:
        """One input event read at `now` (boot-time seconds); a finished scan or None."""
        if type_ != EV_KEY:
            return None
        if code in (KEY_LEFTSHIFT, KEY_RIGHTSHIFT):
            self._shift = max(0, self._shift + (1 if value else -1)) if value != 2 else self._shift
            return None
        if value != 1:  # releases and autorepeat type nothing
            return None
        if self._typed is not None and now - self._last > self.stale_s:
            log.warning("handheld: a scan without its end was thrown away")
            self._typed = None
        self._last = now
        if code == KEY_CAPSLOCK:
            self._caps = not self._caps
            return None
        if code in TERMINATORS:
            scan, self._typed = self._typed, None
            return bytes(scan) if scan else None
        if code in _SILENT:
            return None
        typed = self._typed if self._typed is not None else bytearray()
        self._typed = typed
        if len(typed) >= MAX_SCAN:
            return None
        pair = US_KEYS.get(code)
        if pair is None:
            typed += UNREADABLE
            return None
        plain, shifted = pair
        upper = bool(self._shift) != (self._caps and plain.isalpha())
        typed += (shifted if upper else plain).encode("ascii")
        return None


def read_events(stream: BinaryIO) -> Iterator[tuple[int, int, int]]:
    """(type, code, value) of each whole input event in `stream` until it ends."""
    while True:
        chunk = stream.read(EVENT.size * 64)
        if not chunk:
            return
        usable = len(chunk) - len(chunk) % EVENT.size
        for _, _, type_, code, value in EVENT.iter_unpack(chunk[:usable]):
            yield type_, code, value


def events_of_text(text: str, *, terminator: int = KEY_ENTER) -> bytes:
    """The input events a US-layout wedge sends for `text` (recordings, the demo)."""
    by_char: dict[str, tuple[int, bool]] = {}
    for code, (plain, shifted) in US_KEYS.items():
        if code < 55 or code == 57:  # the main block, as a scanner types
            by_char.setdefault(plain, (code, False))
            by_char.setdefault(shifted, (code, True))
    out = bytearray()

    def key(code: int, value: int) -> None:
        out.extend(EVENT.pack(0, 0, EV_MSC, 4, 0x70000 + code))
        out.extend(EVENT.pack(0, 0, EV_KEY, code, value))
        out.extend(EVENT.pack(0, 0, EV_SYN, 0, 0))

    for char in text:
        code, shift = by_char[char]
        if shift:
            key(KEY_LEFTSHIFT, 1)
        key(code, 1)
        key(code, 0)
        if shift:
            key(KEY_LEFTSHIFT, 0)
    key(terminator, 1)
    key(terminator, 0)
    return bytes(out)


class HandheldReader:
    """A reader thread for one handheld scanner; `on_scan(raw)` for each scan.

    `device` is ``evdev:/dev/input/…`` (a keyboard wedge) or ``serial:/dev/ttyACM0``
    (``serial:/dev/ttyACM0@9600`` for another speed).
    """

    def __init__(
        self,
        device: str,
        on_scan: Callable[[bytes], None],
        *,
        retry_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        kind, _, where = device.partition(":")
        if kind not in ("evdev", "serial") or not where:
            raise ValueError(
                f"handheld {device!r}: write evdev:/dev/input/… or serial:/dev/ttyACM0"
            )
        self.kind = kind
        self.path, _, speed = where.partition("@")
        if speed and not speed.isdigit():
            raise ValueError(f"handheld {device!r}: the speed after @ is a number of baud")
        self.baud = int(speed or 9600)
        self._on_scan = on_scan
        self._retry_s = retry_s
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: starting | ready | unavailable | stopped, and why (for the status bar, doctor)
        self.state = "starting"
        self.trouble: str | None = None
        #: whether the wedge is held for this reader alone (EVIOCGRAB took)
        self.grabbed = False
        self.scans = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="qrpos-handheld", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self.state = "stopped"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.kind == "evdev":
                    self._read_wedge()
                else:
                    self._read_serial()
                if self._stop.is_set():
                    break
                self._unavailable("the scanner's device closed")
            except Exception as exc:  # unplugged, no permission, a wrong path
                self._unavailable(_why(exc))
            self._stop.wait(self._retry_s)

    def _unavailable(self, why: str) -> None:
        if why != self.trouble:
            log.warning("handheld scanner %s: %s", self.path, why)
        self.state, self.trouble, self.grabbed = "unavailable", why, False

    def _ready(self) -> None:
        if self.state != "ready":
            log.info("handheld scanner %s ready", self.path)
        self.state, self.trouble = "ready", None

    def _scan(self, raw: bytes) -> None:
        self.scans += 1
        try:
            self._on_scan(raw)
        except Exception:
            log.exception("handheld: the scan handler failed")

    def _read_wedge(self) -> None:
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb", buffering=0) as stream:
            try:
                fcntl.ioctl(fd, EVIOCGRAB, 1)
                self.grabbed = True
            except OSError as exc:  # not an input device (a recording), or held elsewhere
                log.warning("handheld: %s cannot be held alone (%s)", self.path, _why(exc))
            self._ready()
            decoder = KeyDecoder()
            while not self._stop.is_set():
                readable, _, _ = select.select([fd], [], [], 0.2)
                if not readable:
                    continue
                chunk = stream.read(EVENT.size * 64)
                if chunk is None:
                    continue
                if not chunk:
                    if not _is_char_device(self.path):
                        return  # a recording played to its end, or the device is gone
                    continue
                now = self._clock()
                usable = len(chunk) - len(chunk) % EVENT.size
                for _, _, type_, code, value in EVENT.iter_unpack(chunk[:usable]):
                    scan = decoder.feed(type_, code, value, now)
                    if scan is not None:
                        self._scan(scan)

    def _read_serial(self) -> None:
        import serial  # pyserial, loaded only for a serial scanner

        with serial.Serial(self.path, self.baud, timeout=0.2) as port:
            self._ready()
            typed = bytearray()
            last = self._clock()
            while not self._stop.is_set():
                chunk = port.read(256)
                now = self._clock()
                if not chunk:
                    continue
                if typed and now - last > STALE_S:
                    typed.clear()  # the end of an earlier code was lost
                last = now
                for byte in chunk:
                    if byte in (0x0D, 0x0A):
                        if typed:
                            self._scan(bytes(typed))
                            typed.clear()
                    elif len(typed) < MAX_SCAN:
                        typed.append(byte)


def _is_char_device(path: str) -> bool:
    with contextlib.suppress(OSError):
        return stat.S_ISCHR(Path(path).stat().st_mode)
    return False


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


#: words in an input device's name that say "a barcode scanner" (vendors and the generic
#: names their USB descriptors use)
SCANNER_NAMES = re.compile(
    r"barcode|bar code|scanner|\bscan\b|honeywell|hand held products|symbol|zebra|datalogic|"
    r"newland|netum|tera|eyoyo|inateck|hid kbw|opticon|cino|sunmi|mindeo",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class InputDevice:
    """One entry of /proc/bus/input/devices that types keys."""

    name: str
    event: str  # "event3"
    vendor: str
    product: str

    @property
    def path(self) -> str:
        return f"/dev/input/{self.event}"

    @property
    def looks_like_a_scanner(self) -> bool:
        return bool(SCANNER_NAMES.search(self.name))


def keyboards(text: str | None = None) -> list[InputDevice]:
    """The devices that type keys, from /proc/bus/input/devices (or `text`)."""
    if text is None:
        try:
            text = Path("/proc/bus/input/devices").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
    found: list[InputDevice] = []
    for block in text.split("\n\n"):
        fields: dict[str, Any] = {}
        for line in block.splitlines():
            tag, _, rest = line.partition(": ")
            if tag == "I":
                fields.update(dict(p.split("=", 1) for p in rest.split() if "=" in p))
            elif tag == "N":
                fields["name"] = rest.partition("=")[2].strip('"')
            elif tag == "H":
                fields["handlers"] = rest.partition("=")[2].split()
        handlers = fields.get("handlers", [])
        event = next((h for h in handlers if h.startswith("event")), None)
        if event and "kbd" in handlers:
            found.append(
                InputDevice(
                    fields.get("name", "?"),
                    event,
                    fields.get("Vendor", ""),
                    fields.get("Product", ""),
                )
            )
    return found
