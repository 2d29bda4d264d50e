"""Frame pixels for people and for memory: the aiming preview drawn in block characters,
an area-mean resize with small temporaries (and `qrpos.memory`'s heap trim, re-exported).
Used by the scan loop and the virtual phone; numpy only (no OpenCV on the camera path)."""

from __future__ import annotations

import numpy as np

from qrpos.memory import release_free_memory as release_free_memory
from qrpos.scanner.frames import Frame

#: shading from dark to light for the aiming preview
PREVIEW_SHADES = " ░▒▓█"


def render_preview(frame: Frame, cols: int, rows: int) -> list[str]:
    """`frame` shrunk to cols x rows and drawn with `PREVIEW_SHADES`."""
    small = area_mean(frame, cols, rows)
    levels = (small.astype(np.uint16) * len(PREVIEW_SHADES) // 256).astype(np.uint8)
    return ["".join(PREVIEW_SHADES[v] for v in row) for row in levels]


def area_mean(frame: Frame, cols: int, rows: int) -> Frame:
    """`frame` resized to cols x rows: each cell the mean of the pixels it covers when
    shrinking (the nearest pixel when a side grows). Small temporaries only: the UI thread
    runs this for the aiming preview several times a second."""
    h, w = frame.shape
    ys = np.linspace(0, h, rows + 1).astype(np.intp)
    xs = np.linspace(0, w, cols + 1).astype(np.intp)
    if rows > h or cols > w:
        return np.ascontiguousarray(
            frame[np.minimum(ys[:-1], h - 1)][:, np.minimum(xs[:-1], w - 1)]
        )
    sums = np.add.reduceat(frame, ys[:-1], axis=0, dtype=np.uint32)
    sums = np.add.reduceat(sums, xs[:-1], axis=1, dtype=np.uint32)
    area = np.outer(np.diff(ys), np.diff(xs))
    return np.ascontiguousarray((sums // area).astype(np.uint8))
