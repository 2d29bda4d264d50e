"""A 2×20 pole display (VFD) over serial or USB-serial: the bytes of each protocol, and a
sink that holds the port open between updates (and opens it again when it fails).

Two command sets, chosen in `[customer_display] protocol`:

- ``escpos``: Epson's ESC/POS customer display commands (DM-D series and the many that
  copy them): ``ESC @`` init, ``ESC t n`` code table, ``FF`` clear, ``US $ x y`` cursor.
  User-defined characters (``ESC & 1 c1 c2 5 d1..d5`` then ``ESC % 1``) draw Ө, ө, Ү, ү
  and ₮ where the model takes them.
- ``cd5220``: the CD5220 set: ``ESC @``, ``ESC t n``, ``FF``, then ``ESC Q A`` (upper
  line) and ``ESC Q B`` (lower line), each ended by ``CR``. No user-defined characters.

The code page is per model (`codepage`: ``pc866`` for Cyrillic, ``ascii``). PC866 has no
Ө, Ү or ₮: with `udc` on, those letters are drawn as user-defined characters on five
codes the text never needs (``[ \\ ] ^ _``); without, the nearest letter stands in
(Ө→О, Ү→У, ₮→T). Every update is a whole frame (init, clear, both lines), so a display
that was unplugged or power-cycled shows the newest state as soon as it takes bytes again.
"""

from __future__ import annotations

import contextlib
import threading
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from qrpos.peripherals.display_port import DisplayTrouble
from qrpos.present.customer import CustomerView, pole_lines
from qrpos.said import Said, os_reason, say

if TYPE_CHECKING:
    from PIL import Image

Protocol = Literal["escpos", "cd5220"]
PROTOCOLS: tuple[Protocol, ...] = ("escpos", "cd5220")

ESC, FF, CR, US = b"\x1b", b"\x0c", b"\r", b"\x1f"

#: codepage name -> (Python codec, the code table number `ESC t n` selects per protocol)
CODEPAGES: dict[str, tuple[str, dict[Protocol, int]]] = {
    # PC866 is table 17 in Epson's ESC/POS; the CD5220 clones that have it number it 7
    "pc866": ("cp866", {"escpos": 17, "cd5220": 7}),
    "ascii": ("ascii", {"escpos": 0, "cd5220": 0}),
}
#: letters most pole displays lack, and the nearest one each has
NEAREST = {"Ө": "О", "ө": "о", "Ү": "У", "ү": "у", "₮": "T", "…": "...", "·": "-", "№": "N"}
#: the codes user-defined characters take over (consecutive: one ESC & defines them all)
_UDC_FIRST = 0x5B
_UDC_CHARS = "ӨөҮү₮"
#: 5×7 dot patterns (rows top to bottom, "#" = lit) of the user-defined letters
_UDC_GLYPHS = {
    "Ө": (".###.", "#...#", "#...#", "#####", "#...#", "#...#", ".###."),
    "ө": (".....", ".....", ".###.", "#...#", "#####", "#...#", ".###."),
    "Ү": ("#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."),
    "ү": (".....", ".....", "#...#", "#...#", ".#.#.", "..#..", "..#.."),
    "₮": ("#####", "..#..", "..##.", ".##..", "..##.", ".##..", "..#.."),
}


@dataclass(frozen=True)
class PoleModel:
    """What a model of pole display takes: its command set, code page and whether it
    takes user-defined characters."""

    protocol: Protocol = "escpos"
    codepage: str = "pc866"
    udc: bool = True

    @property
    def uses_udc(self) -> bool:
        """User-defined characters are sent (ESC/POS only; CD5220 has none)."""
        return self.udc and self.protocol == "escpos"


def _glyph_columns(rows: tuple[str, ...]) -> bytes:
    """A 5×7 glyph as five column bytes, the top dot in the most significant bit."""
    columns = bytearray()
    for x in range(5):
        byte = 0
        for y, row in enumerate(rows):
            if row[x] == "#":
                byte |= 0x80 >> y
        columns.append(byte)
    return bytes(columns)


def udc_definition() -> bytes:
    """``ESC & 1 c1 c2`` and five columns per letter, then ``ESC % 1`` (use them)."""
    last = _UDC_FIRST + len(_UDC_CHARS) - 1
    data = bytearray(ESC + b"&" + bytes([1, _UDC_FIRST, last]))
    for ch in _UDC_CHARS:
        data += bytes([5]) + _glyph_columns(_UDC_GLYPHS[ch])
    return bytes(data) + ESC + b"%\x01"


def encode_line(text: str, model: PoleModel) -> bytes:
    """One 20-character line in the model's code page: a letter it lacks is drawn as a
    user-defined character (where it takes them) or as the nearest letter, else "?"; a
    control character is "?" (text never carries a command to the display)."""
    codec = CODEPAGES[model.codepage][0]
    out = bytearray()
    for ch in map(_plain, text):
        if model.uses_udc and ch in _UDC_CHARS:
            out.append(_UDC_FIRST + _UDC_CHARS.index(ch))
            continue
        if model.uses_udc and 0x5B <= ord(ch) <= 0x5F:
            ch = "-"  # its code shows a user-defined letter now
        ch = NEAREST.get(ch, ch)
        out += ch.encode(codec, errors="replace")
    return bytes(out)


def as_shown(text: str, model: PoleModel) -> str:
    """`text` as the display shows it: a letter it draws (or its user-defined one), else
    the nearest letter, else "?" (`qrpos display preview --text`)."""
    codec = CODEPAGES[model.codepage][0]
    out = []
    for ch in map(_plain, text):
        if model.uses_udc and ch in _UDC_CHARS:
            out.append(ch)
            continue
        if model.uses_udc and 0x5B <= ord(ch) <= 0x5F:
            ch = "-"
        ch = NEAREST.get(ch, ch)
        out.append(ch.encode(codec, errors="replace").decode(codec))
    return "".join(out)


def _plain(ch: str) -> str:
    """`ch` as text the display shows: a control or format character (ESC, FF, CR, a C1
    code, a bidi mark: from a `shop` name, say) is "?", any other space a space. Never a
    command: ESC @ in the text would reset the display, CR end a CD5220 line."""
    category = unicodedata.category(ch)
    if category[0] == "C" or category in ("Zl", "Zp"):
        return "?"
    return " " if category == "Zs" else ch


def pole_frame(lines: tuple[str, str], model: PoleModel) -> bytes:
    """The whole update for `lines` (two lines of 20): init, code page, clear, both lines."""
    table = CODEPAGES[model.codepage][1][model.protocol]
    first, second = (encode_line(line, model) for line in lines)
    head = ESC + b"@" + ESC + b"t" + bytes([table])
    if model.protocol == "cd5220":
        return head + FF + ESC + b"QA" + first + CR + ESC + b"QB" + second + CR
    udc = udc_definition() if model.uses_udc else b""
    return head + udc + FF + US + b"$\x01\x01" + first + US + b"$\x01\x02" + second


def view_frame(view: CustomerView, model: PoleModel) -> bytes:
    """The bytes that show `view` on a pole display of `model`."""
    return pole_frame(pole_lines(view), model)


class PoleSink:
    """A pole display on `device` (a serial port, often a /dev/serial/by-id link). The
    port is opened at the first update and held between updates; when it fails (the
    display unplugged, power-cycled, plugged back in as a new device) it is closed and
    opened again at once, once, so a display that is back is found without a restart and
    one that is gone is said as trouble (`display.open` or `display.write`)."""

    #: a pole display shows no camera
    live = False

    def __init__(
        self,
        device: str,
        baud: int = 9600,
        model: PoleModel | None = None,
        *,
        timeout_s: float = 2.0,
    ) -> None:
        self.device = device
        self.baud = baud
        self.model = model or PoleModel()
        self.timeout_s = timeout_s
        self.name = f"vfd:{device}@{baud}"
        #: the open port (a `serial.Serial`), None until the first update or after a failure
        self._port: Any = None
        #: the worker shows, `stop` says farewell and closes: one at a time
        self._lock = threading.Lock()

    def show(self, view: CustomerView, camera: Image.Image | None = None) -> None:
        """Send `view` as one whole frame; `DisplayTrouble` when the port fails."""
        self.send(view_frame(view, self.model))

    def send(self, data: bytes) -> None:
        """Write `data` and wait for it to go out, on the port held open since the last
        update. A held port that fails is closed and the device opened again for one more
        try (an unplugged display's old port fails; the same display plugged back in is a
        new one); `DisplayTrouble` says why the fresh try failed too."""
        with self._lock:
            if self._port is not None:
                try:
                    self._write(self._port, data)
                    return
                except DisplayTrouble:
                    self._drop()
            port = self._open()
            try:
                self._write(port, data)
            except DisplayTrouble:
                _close(port)
                raise
            self._port = port

    def write(self, data: bytes) -> None:
        """Open the port, write `data`, wait for it to go out, close (`qrpos display
        test`, `qrpos doctor`: nothing is held after)."""
        try:
            self.send(data)
        finally:
            self.close()

    def close(self) -> None:
        """Let the port go (safe to call more than once; the next update opens it)."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            _close(port)

    def _open(self) -> Any:
        import serial  # pyserial: loaded only for a pole display

        try:
            return serial.Serial(
                self.device, self.baud, timeout=self.timeout_s, write_timeout=self.timeout_s
            )
        except (serial.SerialException, OSError, ValueError, OverflowError) as exc:
            raise DisplayTrouble(
                say(
                    "display.open",
                    "{device} cannot be opened ({why})",
                    device=self.device,
                    why=_why(exc),
                )
            ) from None

    def _write(self, port: Any, data: bytes) -> None:
        import termios

        import serial

        try:
            port.write(data)
            port.flush()
        # tcdrain on a port whose device went away raises termios.error (not an OSError)
        except (serial.SerialException, OSError, termios.error) as exc:
            raise DisplayTrouble(
                say(
                    "display.write",
                    "{device} stopped taking data ({why})",
                    device=self.device,
                    why=_why(exc),
                )
            ) from None


def _close(port: Any) -> None:
    import serial

    with contextlib.suppress(serial.SerialException, OSError):
        port.close()


def _why(exc: BaseException) -> Said:
    """Why the port failed, in words for a person (pyserial's errors carry the errno;
    termios.error carries it as its arguments)."""
    import termios

    if isinstance(exc, termios.error) and len(exc.args) == 2:
        exc = OSError(*exc.args)
    return os_reason(exc)
