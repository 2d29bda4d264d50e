"""The demo's virtual phone: a frame source showing a wallet token on a phone screen."""

from __future__ import annotations

import threading
import time

import numpy as np

from qrpos.scanner.frames import Frame
from qrpos.scanner.pixels import release_free_memory
from qrpos.scanner.synthetic import Scene, render_grey

#: how many slightly different frames are rendered per presented token (a hand moves)
VARIANTS = 4


class VirtualPhone:
    """A camera looking at a counter where a customer may be holding up a phone.

    `present(token)` puts a phone showing the token's QR in view (mildly tilted, noisy,
    so the real decoder does real work); `remove()` takes it away. Frames are paced at
    `fps` like a camera.
    """

    name = "virtual phone"

    def __init__(
        self, *, width: int = 640, height: int = 480, fps: float = 15.0, dark_mode: bool = False
    ) -> None:
        self._size = (width, height)
        self._interval = 1.0 / fps
        self._dark_mode = dark_mode
        self._lock = threading.Lock()
        self._frames: list[Frame] = []
        self._empty: Frame = render_grey(Scene(width=width, height=height))
        self._index = 0
        self._next_at = 0.0
        self._open = False
        self._token: str | None = None
        self._shown_at: float | None = None

    @property
    def first_shown_at(self) -> float | None:
        """`time.perf_counter()` when `read` returned the first frame showing the phone
        last presented (None until then): where a scan-to-send latency starts."""
        return self._shown_at

    @property
    def showing(self) -> bool:
        """True while a phone is in view."""
        return self._token is not None

    def present(self, token: str) -> None:
        """Hold up a phone showing `token` (encoded as its UTF-8 bytes, exactly)."""
        payload = token.encode("utf-8")
        w, h = self._size
        frames = [
            render_grey(
                Scene(
                    payloads=[payload],
                    width=w,
                    height=h,
                    qr_fraction=0.5,
                    angle_deg=-6.0 + 3.0 * i,
                    tilt=0.06 + 0.02 * i,
                    blur=0.6,
                    noise=3.0,
                    dark_mode=self._dark_mode,
                    offset=(0.02 * i, -0.01 * i),
                    seed=i,
                )
            )
            for i in range(VARIANTS)
        ]
        release_free_memory()  # the rendering's temporaries, not kept by the C heap
        with self._lock:
            self._frames, self._token, self._index = frames, token, 0
            self._shown_at = None

    def remove(self) -> None:
        """Take the phone away: the camera sees an empty counter."""
        with self._lock:
            self._frames, self._token = [], None

    def open(self) -> None:
        """Nothing to acquire; frames start flowing."""
        self._open = True
        self._next_at = time.monotonic()

    def read(self) -> Frame | None:
        """The next frame, paced at the configured frame rate."""
        if not self._open:
            return None
        delay = self._next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self._next_at = max(self._next_at + self._interval, time.monotonic())
        with self._lock:
            if not self._frames:
                return self._empty
            frame = self._frames[self._index % len(self._frames)]
            self._index += 1
            copy = np.array(frame, copy=True)
            if self._shown_at is None:
                self._shown_at = time.perf_counter()
        return copy

    def close(self) -> None:
        """Stop yielding frames."""
        self._open = False
