"""QR codes drawn as a camera sees a page: any modules, anywhere, at any size."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt
import segno

from qrpos.scanner.frames import Frame

Modules = npt.NDArray[np.bool_]


def modules_of(payload: bytes, level: str = "m") -> tuple[Modules, int]:
    qr = segno.make_qr(payload, mode="byte", error=level, boost_error=False)
    return np.array(list(qr.matrix_iter(scale=1, border=0)), dtype=bool), int(qr.version)


def photo(
    dark: Modules,
    corners: npt.NDArray[np.float64],
    *,
    shape: tuple[int, int] = (240, 320),
    blur: float = 0,
) -> Frame:
    """The modules drawn on a grey page, warped so the code's corners land on `corners`:
    drawn 4x finer and averaged down (a camera's pixel sums the light over its area), so
    a module of 1.5 pixels is a grey between its neighbours, not an aliased sample."""
    n = dark.shape[0]
    fine = 4
    flat = np.where(dark, 30, 220).astype(np.float32)
    # pixel centres at whole numbers: a picture's outer edge is half a pixel before its first
    src = np.array([(-0.5, -0.5), (n - 0.5, -0.5), (n - 0.5, n - 0.5), (-0.5, n - 0.5)])
    dst = (corners + 0.5) * fine - 0.5
    warp = cv2.getPerspectiveTransform(src.astype(np.float32), dst.astype(np.float32))
    big = (shape[1] * fine, shape[0] * fine)
    out = cv2.warpPerspective(flat, warp, big, flags=cv2.INTER_NEAREST, borderValue=220.0)
    out = cv2.resize(out, shape[::-1], interpolation=cv2.INTER_AREA)
    if blur:
        out = cv2.GaussianBlur(out, (0, 0), blur)
    return np.ascontiguousarray(np.clip(out, 0, 255).astype(np.uint8))
