"""Frames and the one small interface every frame source implements."""

from __future__ import annotations

from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from qrpos.errors import QrposError

#: a 2-D 8-bit greyscale image (rows x columns), C-contiguous
Frame: TypeAlias = npt.NDArray[np.uint8]


class CameraUnavailable(QrposError):
    """The chosen camera cannot be used; the message names the fix for the installer."""


@runtime_checkable
class FrameSource(Protocol):
    """Something that yields greyscale frames: a camera, a folder of images, a demo phone."""

    #: shown in `qrpos doctor` and the UI, e.g. "picamera", "webcam /dev/video0"
    name: str

    def open(self) -> None:
        """Acquire the device; raises `CameraUnavailable` with the fix when it cannot."""

    def read(self) -> Frame | None:
        """The next frame, or None when none is available (yet, or any more)."""

    def close(self) -> None:
        """Release the device; safe to call more than once."""


def to_grey(image: npt.NDArray[Any]) -> Frame:
    """BGR or greyscale in, contiguous 8-bit greyscale out.

    Colour is weighed as OpenCV's `COLOR_BGR2GRAY` does (0.114 B + 0.587 G + 0.299 R, in
    16-bit fixed point: within one grey level of it) without loading OpenCV.
    """
    if image.ndim == 3:
        bgr = image.astype(np.uint32)
        weighed = bgr[..., 0] * 7471 + bgr[..., 1] * 38470 + bgr[..., 2] * 19595
        image = (weighed + (1 << 15)) >> 16
    return np.ascontiguousarray(image, dtype=np.uint8)
