"""How a frame moved against the mean so far, for `FrameStack` (scanner/stack.py): whether it
stayed (the sensor's noise, parts of the frame changed, one Lucas–Kanade step per quarter),
the whole frame's coarse shift (phase correlation), and each tile's own shift to a part of
a pixel and the tile moved by it (`tile_shifts`, `tile_warp`). numpy only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from qrpos.scanner.frames import Frame
from qrpos.scanner.pixels import halved

_F32 = npt.NDArray[np.float32]
_Bool = npt.NDArray[np.bool_]

#: what motion a frame that "stayed" may hide, in pixels, per quarter of the frame; and
#: what a tile moved onto the mean may (the last Lucas–Kanade round's step)
STILL_PX: Final = 0.2
#: the side of a tile that follows its own motion, in pixels: a hand turns a phone by a
#: tenth of a degree a frame, which moves a tile's corners 0.1 px against its centre
TILE: Final = 64
#: how far a tile's shift may go from the whole frame's coarse one, in pixels
TILE_SHIFT_PX: Final = 6.0
#: Lucas–Kanade rounds a tile's shift is refined in (measured on the field set's tuning
#: half, in a hand: 2, 3 and 4 rounds alike within a scene or two; 3 kept)
_ROUNDS: Final = 3
#: a quarter of the frame, or a tile, with less texture than this (smallest eigenvalue of
#: its gradients' 2×2 structure, per pixel, in grey levels²) says nothing about motion
_TEXTURE: Final = 4.0
#: a part of the frame (one of 8 x 8, or a tile) that differs from the mean so far by this
#: many times what the sensor's noise gives has changed: it is not averaged
CHANGED: Final = 2.0
_BLOCKS: Final = 8
#: what rounding to whole grey levels (and the ISP's JPEG) adds to a difference of frames
_GREY_STEP: Final = 0.5


@functools.lru_cache(maxsize=4)
def _window(shape: tuple[int, ...]) -> _F32:
    """The Hann window phase correlation weighs a reduced frame by (one per frame size,
    kept: read-only, as every caller shares it)."""
    window = np.outer(np.hanning(shape[0]), np.hanning(shape[1])).astype(np.float32)
    window.setflags(write=False)
    return window


def _peak(r: npt.NDArray[np.floating[Any]], y: int, x: int) -> tuple[float, float]:
    """The sub-pixel place of the correlation peak at (y, x): a parabola through its
    neighbours on each axis (wrapped, as the correlation is)."""
    h, w = r.shape
    out: list[float] = []
    for at, (a, c) in (
        (y, (float(r[(y - 1) % h, x]), float(r[(y + 1) % h, x]))),
        (x, (float(r[y, (x - 1) % w]), float(r[y, (x + 1) % w]))),
    ):
        b = float(r[y, x])
        bend = a - 2 * b + c
        out.append(at + (0.5 * (a - c) / bend if bend < 0 else 0.0))
    return out[0], out[1]


def _offset(a: _F32, b: _F32) -> tuple[float, float]:
    """How far the scene moved from `a` to `b`, in their pixels, to a part of one: the peak
    of their phase correlation (numpy's FFT)."""
    if min(a.shape) < 4:
        return 0.0, 0.0
    window = _window(a.shape)
    fa = np.fft.rfft2((a - a.mean()) * window)
    fb = np.fft.rfft2((b - b.mean()) * window)
    cross = fb * np.conj(fa)
    cross /= np.maximum(np.abs(cross), 1e-9)
    r = np.fft.irfft2(cross, s=a.shape)
    y, x = np.unravel_index(int(np.argmax(r)), r.shape)
    py, px = _peak(r, int(y), int(x))
    h, w = a.shape
    return (py - h if py > h / 2 else py), (px - w if px > w / 2 else px)


@dataclass(frozen=True)
class _Gradients:
    """The fixed half of a Lucas–Kanade step over an image's regions (`down` × `across`
    pixels each, the image whole regions): its gradients, their 2×2 structure per region,
    and which regions have texture enough to tell motion (the structure's smallest
    eigenvalue, per pixel, over `_TEXTURE`)."""

    gx: _F32
    gy: _F32
    xx: _F32
    xy: _F32
    yy: _F32
    textured: _Bool
    down: int
    across: int

    @classmethod
    def of(cls, image: _F32, down: int, across: int) -> _Gradients:
        gy, gx = np.gradient(image)
        xx, xy = _regions(gx * gx, down, across), _regions(gx * gy, down, across)
        yy = _regions(gy * gy, down, across)
        smallest = (xx + yy) / 2 - np.sqrt(((xx - yy) / 2) ** 2 + xy * xy)
        textured = (smallest / (down * across) > _TEXTURE) & (xx * yy - xy * xy > 0)
        return cls(gx, gy, xx, xy, yy, textured, down, across)

    def step(self, residual: _F32) -> tuple[_F32, _F32]:
        """The motion (dy, dx) per region that `residual` (the moved image minus the one
        the gradients are of) says is left; 0 where a region has no texture."""
        bx = _regions(self.gx * residual, self.down, self.across)
        by = _regions(self.gy * residual, self.down, self.across)
        det = np.where(self.textured, self.xx * self.yy - self.xy * self.xy, np.float32(1.0))
        uy = np.where(self.textured, (self.xx * by - self.xy * bx) / det, np.float32(0.0))
        ux = np.where(self.textured, (self.yy * bx - self.xy * by) / det, np.float32(0.0))
        return uy.astype(np.float32), ux.astype(np.float32)


def _moved(f: _F32, before: _F32, *, quarters: int = 2) -> float:
    """The largest motion, in pixels, left between `before` and `f` in any of the frame's
    `quarters`² parts that has texture enough to tell (0.0 if none has): one Lucas–Kanade
    step, the residual `f - before` against `f`'s gradient."""
    down, across = f.shape[0] // quarters, f.shape[1] // quarters
    if not down or not across:
        return 0.0
    f, before = (
        f[: down * quarters, : across * quarters],
        before[: down * quarters, : across * quarters],
    )
    uy, ux = _Gradients.of(f, down, across).step(f - before)
    return float(np.hypot(uy, ux).max())


def _noise(small: _F32) -> float:
    """The sensor's noise in a halved frame (one standard deviation, grey levels), from its
    finest detail: the median absolute difference of neighbouring pixels (every other row).
    Texture adds to it, so it errs high, towards calling a frame still."""
    step = np.abs(np.diff(small[::2], axis=1))
    return float(np.median(step)) / 0.6745 / float(np.sqrt(2.0))


def _expected(small: _F32) -> float:
    """The mean absolute difference two frames of a still scene show, from the noise:
    two frames' noise differenced is √2 σ, whose mean absolute value is 0.8 of it."""
    return 1.13 * _noise(small) + _GREY_STEP


def changed(frame: Frame, before: Frame) -> float:
    """How much the most changed part of the frame changed since `before`, against what
    the sensor's noise alone would give (about 1 or less for a still scene)."""
    small = halved(frame)
    return _changed(small, halved(before), _expected(small))


def _changed(small: _F32, before: _F32, expected: float) -> float:
    """`changed` of two halved frames; `expected`: `_expected(small)`."""
    residual = np.abs(small - before)
    h, w = residual.shape
    bh, bw = h // _BLOCKS, w // _BLOCKS
    if not bh or not bw:
        return 0.0
    cells = residual[: bh * _BLOCKS, : bw * _BLOCKS].reshape(_BLOCKS, bh, _BLOCKS, bw)
    worst = float(cells.mean(axis=(1, 3)).max())
    return worst / expected


def _agrees(small: _F32, before: _F32, expected: float) -> bool:
    """Whether a halved frame shows what `before` showed: no part of it changed beyond
    the noise (a phone arrived, a hand came in) and nothing moved by `STILL_PX`."""
    return _changed(small, before, expected) <= CHANGED and _moved(small, before) * 2 <= STILL_PX


_Image = TypeVar("_Image", Frame, _F32)


def shifted(image: _Image, dy: int, dx: int, fill: _Image) -> _Image:
    """`image` moved by (dy, dx); where it has nothing to show, `fill`'s pixels."""
    out = fill.copy()
    h, w = image.shape
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    out[yd, xd] = image[ys, xs]
    return out


def _padded(image: Frame | _F32, tiles: tuple[int, int], side: int) -> _F32:
    """`image` as floats, its last row and column repeated to fill whole tiles."""
    h, w = image.shape
    f: _F32 = np.pad(
        image.astype(np.float32), ((0, tiles[0] * side - h), (0, tiles[1] * side - w)), "edge"
    )
    return f


def _regions(a: _F32, down: int, across: int) -> _F32:
    """The sum over each `down` × `across` region of `a` (whose sides are whole regions)."""
    h, w = a.shape
    out: _F32 = a.reshape(h // down, down, w // across, across).sum(axis=(1, 3), dtype=np.float32)
    return out


def tile_warp(image: _F32, dy: _F32, dx: _F32, side: int) -> _F32:
    """`image` (whole tiles of `side`) sampled at (y + dy, x + dx), the shift constant over
    each tile (`dy`, `dx`: one per tile, in pixels), bilinear; beyond the edge, the edge.

    Each tile's window (one pixel more each way) is gathered in one indexing of a sliding
    window view, then the four neighbours are blended: a few full-frame operations, no
    per-pixel coordinates (about 1.5 ms for 640 × 480 here)."""
    ty, tx = dy.shape
    iy, ix = np.floor(dy), np.floor(dx)
    reach = int(max(np.abs(iy).max(), np.abs(ix).max())) + 1
    padded = np.pad(image, reach + 1, mode="edge")
    rows = np.arange(ty)[:, None] * side + iy.astype(np.intp) + reach + 1
    cols = np.arange(tx)[None, :] * side + ix.astype(np.intp) + reach + 1
    windows = sliding_window_view(padded, (side + 1, side + 1))[rows, cols]
    del padded
    fy = (dy - iy).astype(np.float32)[:, :, None, None]
    fx = (dx - ix).astype(np.float32)[:, :, None, None]
    out: _F32 = np.empty((ty, side, tx, side), np.float32)
    top = out.transpose(0, 2, 1, 3)  # the output, tile by tile
    np.subtract(windows[:, :, :-1, 1:], windows[:, :, :-1, :-1], out=top)
    top *= fx
    top += windows[:, :, :-1, :-1]
    bottom = windows[:, :, 1:, 1:] - windows[:, :, 1:, :-1]
    bottom *= fx
    bottom += windows[:, :, 1:, :-1]
    bottom -= top
    bottom *= fy
    top += bottom
    return out.reshape(ty * side, tx * side)


def tile_shifts(
    before: _F32,
    after: _F32,
    side: int,
    expected: float,
    start: tuple[float, float] = (0.0, 0.0),
) -> tuple[_F32, _F32, _Bool]:
    """Where each `side` × `side` tile of `before` went in `after` (same shapes, whole
    tiles): per tile (dy, dx) such that `after` at (y + dy, x + dx) shows `before` at (y, x),
    and whether the tile, moved so, agrees with `before`.

    Each tile's shift is refined from `start` (the whole frame's motion, coarsely) in
    `_ROUNDS` Lucas–Kanade rounds, up to `TILE_SHIFT_PX` from it. A tile whose rounds did
    not settle (what a further round would move it by is over `STILL_PX`), or that has too
    little texture to tell (a flat part, a single edge), takes the median shift of the
    tiles that did settle: the frame's own motion, so that its tile lies where its
    neighbours do. A tile agrees if, moved by its shift, its mean absolute difference from
    `before` is within `CHANGED` times `expected` (what the noise alone gives, `_expected`)
    and a further round would move it by no more than `STILL_PX`."""
    gradients = _Gradients.of(before, side, side)
    textured = gradients.textured
    reach = np.float32(TILE_SHIFT_PX * side / TILE)
    still = np.float32(STILL_PX * side / TILE)

    def step(dy: _F32, dx: _F32) -> tuple[_F32, _F32, _F32]:
        """What a further round would move each tile by, and its mean absolute residual."""
        residual = tile_warp(after, dy, dx, side) - before
        uy, ux = gradients.step(residual)
        np.abs(residual, out=residual)
        return uy, ux, _regions(residual, side, side)

    dy = np.full(textured.shape, start[0], np.float32)
    dx = np.full(textured.shape, start[1], np.float32)
    for _ in range(_ROUNDS):
        uy, ux, _ = step(dy, dx)
        dy = np.clip(dy - uy, start[0] - reach, start[0] + reach)
        dx = np.clip(dx - ux, start[1] - reach, start[1] + reach)
    uy, ux, off = step(dy, dx)
    settled = textured & (np.hypot(uy, ux) <= still)
    if settled.any() and not settled.all():
        dy = np.where(settled, dy, np.median(dy[settled])).astype(np.float32)
        dx = np.where(settled, dx, np.median(dx[settled])).astype(np.float32)
        uy, ux, off = step(dy, dx)
    agree: _Bool = (off / (side * side) <= CHANGED * expected) & (np.hypot(uy, ux) <= still)
    return dy, dx, agree
