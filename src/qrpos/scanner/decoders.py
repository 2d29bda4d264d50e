"""QR decoders that return the raw bytes of every QR code in a frame.

Two engines: zbar (through pyzbar's ctypes bindings, with zbar's binary mode so it never
guesses a character set and re-encodes) and zxing-cpp (its ``bytes``, when installed).
Both see QR codes only, and both read inverted (dark-mode) codes. zxing-cpp, the default,
goes on to further passes (`qrpos.scanner.passes`) on frames its plain pass reads nothing
in. Neither loads OpenCV: the kiosk's camera path stays about 35 MB lighter without it.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import numpy as np

from qrpos.errors import QrposError
from qrpos.said import Said, say
from qrpos.scanner import blurmodel, resample
from qrpos.scanner.frames import Frame
from qrpos.scanner.passes import AUTO, DEFAULT_PASSES, PassPlan, half

#: the engine `make_decoder()` picks when none is configured: zxing-cpp measured about 4x
#: faster than zbar on the generated set with a higher detection rate (benchmarks/decode.py);
#: zbar is the fallback when zxing-cpp is not installed
DEFAULT_DECODER = "zxing"
DECODER_NAMES = ("zxing", "zbar")

# zbar's fourcc for 8-bit greyscale ("Y800")
_FOURCC_Y800 = 0x30303859
# Frames whose shorter side is above this are scanned at half size first: a phone held to
# the camera gives modules of 4+ pixels, which stay readable at half size, 4x cheaper.
_HALF_SCALE_MIN_SIDE = 400


#: codes found but not decoded that one scan samples again (a code is often found twice,
#: as dark on light and as light on dark: the same corners are tried once)
_RESAMPLE_CODES = 2


def _qr_version(result: Any) -> int | None:
    """The version of a QR code zxing-cpp found, None for anything else (a Micro QR or an
    rMQR candidate, whose versions are "M2" or "R11x99")."""
    extra = getattr(result, "extra", None)
    version = str(extra.get("Version", "")) if isinstance(extra, dict) else ""
    if not version.isascii() or not version.isdigit():
        return None
    number = int(version)
    return number if 1 <= number <= resample.MAX_VERSION else None


def _corners(result: Any) -> list[tuple[float, float]]:
    """The code's corners as zxing-cpp found them: top left, top right, bottom right,
    bottom left (the code's own, whichever way it is turned)."""
    p = result.position
    return [
        (float(c.x), float(c.y)) for c in (p.top_left, p.top_right, p.bottom_right, p.bottom_left)
    ]


def _near(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return abs(a[0] - b[0]) + abs(a[1] - b[1]) < 4.0


class DecoderUnavailable(QrposError):
    """The configured decoder cannot be loaded; the message names the fix."""


class Decoder(Protocol):
    """Finds every QR code in a frame and returns each one's raw bytes."""

    name: str

    def decode(self, frame: Frame) -> list[bytes]:
        """The raw byte content of each QR code found, in no particular order."""


def _zbar_config(wrapper: Any, text: bytes) -> tuple[int, int, int]:
    """(symbology, config, value) for a zbar config string, from libzbar itself."""
    sym, cfg, val = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    if wrapper.zbar_parse_config(text, ctypes.byref(sym), ctypes.byref(cfg), ctypes.byref(val)):
        raise DecoderUnavailable(
            say(
                "decoder.libzbar_old",
                "this libzbar does not understand {setting}: install libzbar0 0.23 or newer "
                "(apt install libzbar0)",
                setting=repr(text.decode()),
            )
        )
    return sym.value, cfg.value, val.value


class ZbarDecoder:
    """zbar with QR only, binary mode (exact bytes) and inverted codes.

    pyzbar's `decode()` cannot set zbar's ``ZBAR_CFG_BINARY``, so this drives the C API
    through pyzbar's ctypes wrapper. Config values come from `zbar_parse_config`, so they
    track the installed libzbar rather than enum numbers copied here.
    """

    name = "zbar"

    def __init__(self, *, half_scale_first: bool = True) -> None:
        try:
            from pyzbar import wrapper
        except ImportError as exc:  # pragma: no cover - pyzbar is a hard dependency
            raise DecoderUnavailable(
                say("decoder.pyzbar_missing", "pyzbar is not installed: pip install pyzbar")
            ) from exc
        except Exception as exc:  # libzbar missing raises ImportError or OSError
            raise DecoderUnavailable(
                say(
                    "decoder.libzbar_missing",
                    "libzbar cannot be loaded ({why}): apt install libzbar0",
                    why=Said.plain(str(exc)),
                )
            ) from None
        self._w = wrapper
        self._half_scale_first = half_scale_first
        self._configs = [
            _zbar_config(wrapper, b"disable"),
            _zbar_config(wrapper, b"qrcode.enable"),
            _zbar_config(wrapper, b"qrcode.binary"),
            _zbar_config(wrapper, b"test-inverted"),
        ]
        # a zbar scanner is not thread-safe; one per thread that decodes
        self._local = threading.local()

    def _scanner(self) -> Any:
        scanner = getattr(self._local, "scanner", None)
        if scanner is None:
            scanner = self._w.zbar_image_scanner_create()
            if not scanner:
                raise DecoderUnavailable(
                    say("decoder.zbar_failed", "zbar could not start (out of memory?)")
                )
            for sym, cfg, val in self._configs:
                self._w.zbar_image_scanner_set_config(scanner, sym, cfg, val)
            self._local.scanner = scanner
        return scanner

    def scan(self, frame: Frame) -> list[bytes]:
        """One zbar pass over `frame` at its own resolution."""
        w = self._w
        # zbar reads the numpy buffer in place; the array must be contiguous and stay alive
        pixels = np.ascontiguousarray(frame, dtype=np.uint8)
        height, width = pixels.shape
        image = w.zbar_image_create()
        if not image:
            raise DecoderUnavailable(
                say("decoder.zbar_failed", "zbar could not start (out of memory?)")
            )
        try:
            w.zbar_image_set_format(image, _FOURCC_Y800)
            w.zbar_image_set_size(image, width, height)
            w.zbar_image_set_data(image, pixels.ctypes.data, pixels.nbytes, None)
            if w.zbar_scan_image(self._scanner(), image) <= 0:
                return []
            found: list[bytes] = []
            symbol = w.zbar_image_first_symbol(image)
            while symbol:
                length = w.zbar_symbol_get_data_length(symbol)
                found.append(ctypes.string_at(w.zbar_symbol_get_data(symbol), length))
                symbol = w.zbar_symbol_next(symbol)
            return found
        finally:
            w.zbar_image_destroy(image)

    def decode(self, frame: Frame) -> list[bytes]:
        """Half size first on large frames (cheap), full size only when that finds nothing."""
        if self._half_scale_first and min(frame.shape) >= _HALF_SCALE_MIN_SIDE:
            found = self.scan(half(frame))
            if found:
                return found
        return self.scan(frame)


class ZxingDecoder:
    """zxing-cpp, QR only, its raw ``bytes`` (no ECI transcoding), inverted codes tried.

    `decode` runs the plain pass, then `passes` on a frame it finds nothing in, as far as
    `budget_ms` allows (see `PassPlan`: "auto", the default, sizes it from the measured
    speed of the plain pass on this device); ``passes=()`` is the plain pass alone.
    """

    name = "zxing"

    def __init__(
        self,
        *,
        passes: Sequence[str] = DEFAULT_PASSES,
        budget_ms: float | Literal["auto"] | None = AUTO,
        clock: Callable[[], float] = time.perf_counter,
        resample_found: bool = True,
    ) -> None:
        try:
            import zxingcpp
        except ImportError:
            raise DecoderUnavailable(
                say(
                    "decoder.zxing_missing",
                    'zxing-cpp is not installed: pip install zxing-cpp, or set decoder = "zbar"',
                )
            ) from None
        self._z: Any = zxingcpp
        self._formats = self._z.BarcodeFormat.QRCode
        #: codes the engine finds but cannot decode are sampled again (`resample`)
        self.resample = resample_found
        self.plan = PassPlan(self.read, passes, budget_ms=budget_ms, clock=clock, further=self.scan)

    def _results(self, frame: Frame, *, errors: bool) -> list[Any]:
        results: list[Any] = self._z.read_barcodes(
            frame, formats=self._formats, try_invert=True, try_rotate=False, return_errors=errors
        )
        return results

    def read(self, frame: Frame) -> list[bytes]:
        """One zxing-cpp read of `frame`: raw bytes of every valid QR code it finds (the
        plain pass: no second look at a code found but not decoded).

        90°-rotation search is off: it is for 1-D barcodes, a QR's finders are rotation
        free. Only codes whose error correction checked out (`valid`) come back, so a
        damaged read is never a token.
        """
        return [bytes(r.bytes) for r in self._results(frame, errors=False) if r.valid]

    def scan(self, frame: Frame) -> list[bytes]:
        """`read`, and when it decodes nothing, the codes it found but could not decode
        read again from their sampled modules (`resample`, unless turned off)."""
        results = self._results(frame, errors=self.resample)
        # each code once: an image of several clean codes (`qrpos.scanner.locate`) holds
        # the same one drawn a few ways
        found = list(dict.fromkeys(bytes(r.bytes) for r in results if r.valid))
        if found or not self.resample:
            return found
        tried: list[tuple[float, float]] = []
        for result in results:
            version = _qr_version(result)
            if version is None:
                continue
            corners = _corners(result)
            if any(_near(corners[0], seen) for seen in tried):
                continue  # the same code again (found as dark and as light)
            tried.append(corners[0])
            for clean in blurmodel.images(frame, corners, version):
                found = [bytes(r.bytes) for r in self._read_clean(clean) if r.valid]
                if found:
                    return found
            if len(tried) >= _RESAMPLE_CODES:
                break
        return []

    def _read_clean(self, image: Frame) -> list[Any]:
        """The engine on a clean code drawn by `resample`: nothing else in the image."""
        results: list[Any] = self._z.read_barcodes(
            image,
            formats=self._formats,
            try_invert=True,
            try_rotate=False,
            try_downscale=False,
            is_pure=True,
        )
        return results

    def decode(self, frame: Frame) -> list[bytes]:
        """Raw bytes of every valid QR code found by the plain pass or a further one."""
        return self.plan.decode(frame)


def make_decoder(name: str | None = None) -> Decoder:
    """The decoder called `name` ("zxing" or "zbar"), or the measured default.

    With no name, zxing-cpp when installed, else zbar. A named decoder that cannot be
    loaded raises `DecoderUnavailable` with the fix.
    """
    if not name:
        try:
            return ZxingDecoder()
        except DecoderUnavailable:
            return ZbarDecoder()
    chosen = name.strip().lower()
    if chosen == "zbar":
        return ZbarDecoder()
    if chosen == "zxing":
        return ZxingDecoder()
    raise DecoderUnavailable(
        say(
            "decoder.unknown",
            "unknown decoder {name}: choose one of {choices}",
            name=repr(name),
            choices=", ".join(DECODER_NAMES),
        )
    )
