"""Frame pixels for people and for memory: the aiming preview drawn in block characters,
an area-mean resize with small temporaries, the homography of four corners, a frame's
centre, 2x2 means and box sums (and `qrpos.memory`'s heap trim, re-exported). Used by the scan loop,
the decoder's resampling and passes, and the virtual phone; numpy only (no OpenCV on the
camera path)."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

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


def homographies(src: npt.ArrayLike, dst: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """(k, 3, 3): for each of k sets of four points `dst` (k, 4, 2), the homography taking
    the four points `src` (4, 2) to them (its last element 1). Raises
    `numpy.linalg.LinAlgError` when three of the points are in a line."""
    s = np.asarray(src, np.float64).reshape(4, 2)
    d = np.asarray(dst, np.float64).reshape(-1, 4, 2)
    k = d.shape[0]
    a = np.zeros((k, 4, 2, 8))  # the rows for point i: [i, 0] for u, [i, 1] for v
    a[:, :, 0, 0:2] = a[:, :, 1, 3:5] = s
    a[:, :, 0, 2] = a[:, :, 1, 5] = 1.0
    a[:, :, :, 6:8] = -d[:, :, :, None] * s[None, :, None, :]
    # a name of its own: numpy 2's stubs give each rank its own type (Debian 13)
    rows = a.reshape(k, 8, 8)
    h = np.linalg.solve(rows, d.reshape(k, 8)[..., None])[..., 0]
    out: npt.NDArray[np.float64] = np.concatenate([h, np.ones((k, 1))], axis=1).reshape(k, 3, 3)
    return out


def centre_box(
    shape: tuple[int, ...], most: tuple[int, int], share: float = 1.0
) -> tuple[int, int, int, int]:
    """Top, left, height and width of a frame's centre: `share` of each side, at most
    `most` (rows, columns), at least one pixel. The passes that look at the centre only
    (`zoom`, `deblur`) and the smear measure take theirs from here."""
    h, w = shape[0], shape[1]
    ch = max(1, min(int(h * share), most[0]))
    cw = max(1, min(int(w * share), most[1]))
    return (h - ch) // 2, (w - cw) // 2, ch, cw


_Box = TypeVar(
    "_Box",
    npt.NDArray[np.uint16],
    npt.NDArray[np.int32],
    npt.NDArray[np.float32],
    npt.NDArray[np.float64],
)


def box_sum(f: _Box, side: int) -> _Box:
    """Sum over each pixel's side x side neighbourhood (edges repeated), added up in
    order, left to right: exact for integers, the same bits every time for floats."""
    r = side // 2
    p = np.pad(f, r, mode="edge")
    h, w = f.shape
    rows = sum((p[i : i + h] for i in range(1, side)), p[:h])
    out: _Box = sum((rows[:, i : i + w] for i in range(1, side)), rows[:, :w])
    return out


def halved(frame: npt.NDArray[np.uint8] | npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each 2x2 block's mean, in 32-bit floats (an odd last row or column dropped). An
    8-bit frame is summed in 16 bits first: the same values, without a frame-sized float
    copy."""
    h, w = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
    if frame.dtype == np.uint8:
        eight = frame.astype(np.uint8, copy=False)
        total = eight[0:h:2, 0:w:2].astype(np.uint16)
        for dy, dx in ((0, 1), (1, 0), (1, 1)):
            total += eight[dy:h:2, dx:w:2]
        out: npt.NDArray[np.float32] = total.astype(np.float32)
    else:
        f = frame[:h, :w].astype(np.float32)
        # float32 already; said again for numpy 2's stubs, which widen the sum (no copy)
        out = (f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]).astype(
            np.float32, copy=False
        )
    out *= np.float32(0.25)
    return out
