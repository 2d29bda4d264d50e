"""A frame source over image files or a folder of them (tests, `qrpos decode`, field logs)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qrpos.errors import QrposError
from qrpos.said import Said, os_reason, say
from qrpos.scanner.frames import CameraUnavailable, Frame, to_grey

IMAGE_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm", ".tif", ".tiff", ".webp"}
)


class ImageUnreadable(QrposError, ValueError):
    """An image file that cannot be read or decoded; the message says which and why."""


def read_image(path: Path) -> Frame:
    """One image file as a greyscale frame; `ImageUnreadable` (a `ValueError`) with a
    clear message if unreadable."""
    import cv2  # loaded only for image files: the camera path runs without OpenCV

    try:
        data = path.read_bytes()
    except OSError as exc:
        why = os_reason(exc)
        raise ImageUnreadable(
            say("image.cannot_read", "cannot read {path}: {why}", path=str(path), why=why)
        ) from None
    try:
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    except cv2.error:
        # OpenCV raises on an empty buffer (a file created but not yet written, as a
        # frame being replaced is) where a short one only returns None: the same answer
        image = None
    if image is None:
        raise ImageUnreadable(
            say("image.not_an_image", "{path} is not an image OpenCV can read", path=str(path))
        )
    if image.dtype != np.uint8:
        image = cv2.convertScaleAbs(image, alpha=255.0 / max(1.0, float(image.max())))
    if image.ndim == 3 and image.shape[2] == 4:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    return to_grey(image)


def image_files(paths: Sequence[Path]) -> list[Path]:
    """Files named, and the images inside folders named, in a stable order."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(c for c in p.iterdir() if c.suffix.lower() in IMAGE_SUFFIXES))
        else:
            out.append(p)
    return out


class ReplaySource:
    """Yields each image once (or in a loop), paced at `fps` when given."""

    def __init__(self, paths: Sequence[Path], *, loop: bool = False, fps: float | None = None):
        self.name = "replay " + ", ".join(str(p) for p in paths[:3])
        self._paths = list(paths)
        self._loop = loop
        self._interval = 1.0 / fps if fps else 0.0
        self._frames: list[Frame] = []
        self._index = 0
        self._next_at = 0.0

    def open(self) -> None:
        """Load every image up front, so a bad file is reported at once."""
        files = image_files(self._paths)
        if not files:
            raise CameraUnavailable(
                say(
                    "camera.replay_empty",
                    "replay: no images in {paths}",
                    paths=", ".join(map(str, self._paths)),
                )
            )
        try:
            self._frames = [read_image(f) for f in files]
        except ImageUnreadable as exc:
            why = exc.said or Said.plain(str(exc))
            raise CameraUnavailable(
                say("camera.replay_unreadable", "replay: {why}", why=why)
            ) from None
        self._index = 0

    def read(self) -> Frame | None:
        """The next image; None once all were shown (unless looping)."""
        if not self._frames:
            return None
        if self._index >= len(self._frames):
            if not self._loop:
                return None
            self._index = 0
        if self._interval:
            delay = self._next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._next_at = time.monotonic() + self._interval
        frame = self._frames[self._index]
        self._index += 1
        return frame

    def close(self) -> None:
        """Forget the images."""
        self._frames = []
