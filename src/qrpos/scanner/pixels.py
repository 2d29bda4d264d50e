"""Frame pixels for people and for memory: the aiming preview drawn in block characters,
an area-mean resize with small temporaries, and giving the C heap's free pages back.
Used by the scan loop and the virtual phone; numpy only (no OpenCV on the camera path)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np

from qrpos.scanner.frames import Frame

#: shading from dark to light for the aiming preview
PREVIEW_SHADES = " ░▒▓█"


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc: its allocator is not the one to nudge
        return None
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's `malloc_trim`).

    The further decode passes allocate a few frame-sized temporaries per frame; glibc keeps
    what they freed in the decode thread's own heap, and the kiosk's resident memory grew
    by ~20 MB over a sale (benchmarks/startup.py). Trimming after such a frame costs
    about 0.4 ms; the alternative, a fixed mmap threshold, made every decode 3x slower.
    """
    if _TRIM is not None:
        _TRIM(0)


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
