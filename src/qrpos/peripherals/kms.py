"""A second screen as the customer display: the view drawn full-screen (with the camera's
live view beside the amount) into a framebuffer on a named DRM/KMS connector.

The seam is small on purpose: `FramebufferSink` draws into any `Framebuffer` (a size and
a `write` of a whole picture), which tests fake. `KmsFramebuffer` is the real one, through
`pykms` (kmsxx's Python binding, the one picamera2's DRM preview uses; it comes with
`python3-picamera2` on Raspberry Pi OS). It is imported only when a `kms:` display is
opened: nothing else of qrpos needs it, and a machine without it says so in words.
Never a compositor or SDL: either would take the console's screen or keyboard.

Unproven without the hardware (hardware.md): the connector's default mode is used, and
the picture is copied as XRGB8888 into a dumb buffer set on the connector's CRTC.
"""

from __future__ import annotations

import logging
import mmap
from collections.abc import Callable
from typing import Any, Protocol

from PIL import Image

from qrpos.peripherals.customer_picture import draw_view
from qrpos.peripherals.display_port import DisplayTrouble, load_pykms
from qrpos.present.customer import CustomerView
from qrpos.said import Said, os_reason, say

log = logging.getLogger("qrpos.display")


class Framebuffer(Protocol):
    """A screen's whole picture."""

    #: (width, height) in pixels
    size: tuple[int, int]

    def write(self, picture: Image.Image) -> None:
        """Put `picture` (RGB, exactly `size`) on the screen; OSError when it cannot."""
        ...

    def close(self) -> None:
        """Let the screen go."""
        ...


class FramebufferSink:
    """A customer display drawn into a framebuffer, opened on first use and again after
    any failure (a screen unplugged and plugged back in comes back by itself)."""

    live = True

    def __init__(self, name: str, open_framebuffer: Callable[[], Framebuffer]) -> None:
        self.name = name
        self._open = open_framebuffer
        self._fb: Framebuffer | None = None

    def show(self, view: CustomerView, camera: Image.Image | None = None) -> None:
        """Draw `view` at the screen's size and put it up."""
        self._put(lambda size: draw_view(view, size, camera))

    def show_picture(self, picture_for: Callable[[tuple[int, int]], Image.Image]) -> None:
        """Put up a picture drawn for the screen's size (the test pattern)."""
        self._put(picture_for)

    def _put(self, picture_for: Callable[[tuple[int, int]], Image.Image]) -> None:
        """Open the screen if it is not, draw for its size, put the picture up; an OSError
        on the way (the buffer not mapped, the screen gone) is `DisplayTrouble`, and the
        screen is opened again next time."""
        try:
            if self._fb is None:
                self._fb = self._open()
            picture = picture_for(self._fb.size)
            self._fb.write(picture)
        except OSError as exc:
            self.close()
            raise DisplayTrouble(
                say(
                    "display.write",
                    "{device} stopped taking data ({why})",
                    device=self.name,
                    why=os_reason(exc),
                )
            ) from None

    def close(self) -> None:
        """Let the screen go (it is opened again on the next view)."""
        fb, self._fb = self._fb, None
        if fb is not None:
            try:
                fb.close()
            except OSError:
                log.debug("framebuffer close failed", exc_info=True)


class KmsFramebuffer:
    """A dumb XRGB8888 buffer on `connector` (e.g. ``HDMI-A-2``), in its default mode."""

    def __init__(self, connector: str) -> None:
        pykms = load_pykms()
        try:
            self._card: Any = pykms.Card()
            resources = pykms.ResourceManager(self._card)
            conn = resources.reserve_connector(connector)
            if conn is None or not conn.connected():
                raise DisplayTrouble(_no_screen(connector))
            crtc = resources.reserve_crtc(conn)
            mode = conn.get_default_mode()
            self._fb: Any = pykms.DumbFramebuffer(self._card, mode.hdisplay, mode.vdisplay, "XR24")
            crtc.set_mode(conn, self._fb, mode)
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("KMS on %s: %s", connector, exc)
            raise DisplayTrouble(_no_screen(connector)) from None
        self.size = (int(mode.hdisplay), int(mode.vdisplay))
        self._stride = int(self._fb.stride(0))
        self._map = mmap.mmap(self._fb.fd(0), self._stride * self.size[1])

    def write(self, picture: Image.Image) -> None:
        """Copy `picture` into the buffer as XRGB8888 (B, G, R, X in memory)."""
        data = picture.convert("RGB").tobytes("raw", "BGRX")
        row = self.size[0] * 4
        if row == self._stride:
            self._map[: len(data)] = data
            return
        for y in range(self.size[1]):
            self._map[y * self._stride : y * self._stride + row] = data[y * row : (y + 1) * row]

    def close(self) -> None:
        """Unmap the buffer (the card is closed with it)."""
        self._map.close()


def _no_screen(connector: str) -> Said:
    return say("display.connector", "no connected screen on {connector}", connector=connector)


def kms_sink(connector: str) -> FramebufferSink:
    """The second screen on `connector`, opened on the first view."""
    return FramebufferSink(f"kms:{connector}", lambda: KmsFramebuffer(connector))
