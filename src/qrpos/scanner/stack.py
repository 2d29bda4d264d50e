"""Consecutive frames of a phone held still, averaged: the sensor's noise falls as 1/√n.

A code of 1.5 pixels a module under JPEG, or one smeared by a module's width of motion,
is read or lost by a few grey levels; the camera's noise is of that size. A phone held up
to the till stays in view for many frames, and while it is still, the mean of those frames
shows the same code with less noise than any one of them. `FrameStack.add` takes each new
frame and returns that mean, aligned to the new frame, over the frames that agree with it:

1. **whether it stayed**: the new frame against the mean so far (both halved): no part of
   the frame (8 × 8 of them) may differ by more than `CHANGED` times what the sensor's
   noise gives (a phone arrived, a thumb came in), and what motion is left, estimated from
   the image's gradients in each quarter of the frame (one Lucas–Kanade step: the residual
   against the gradient), must stay under `STILL_PX`;
2. **where it moved**, if it did not stay: the shift between the mean and the new frame,
   in whole pixels, by phase correlation (numpy's FFT of the halved images; the peak's
   place refined to a sub-pixel of the half frame, then rounded to a pixel of the full
   one); the sum is moved by it, and the new frame must agree with the moved mean as in 1.

A frame that agrees with neither (turned, moved by a part of a pixel, another scene)
starts a new mean: a mean is of frames whose shift is known to `STILL_PX`, and it would
otherwise blur the very modules it should clear. It is compared with the mean, not with
the frame before it, so a phone that creeps by less than the threshold a frame leaves the
mean once it has crept that far. The stack is what the further passes read (`PassPlan`):
on a phone that stays still, each frame's passes see a cleaner image than the frame
before; on one that moves they see the frame itself, as without a stack. A scene that
stayed still for `SETTLED` frames and then changed is a phone arriving (`arrived`): the
plan starts its passes from the first again.

numpy only, like the passes: the kiosk's camera path does not load OpenCV.
"""

from __future__ import annotations

import functools
from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from qrpos.scanner.frames import Frame

_F32 = npt.NDArray[np.float32]

#: frames in a mean at most (0.27 s at 30 fps): noise falls by √8 ≈ 2.8
DEPTH: Final = 8
#: what motion a mean may hide, in pixels, per quarter of the frame
STILL_PX: Final = 0.2
#: the furthest a phone may move between two frames and still be stacked, in pixels
MAX_SHIFT_PX: Final = 16
#: a quarter of the frame with less texture than this (smallest eigenvalue of its
#: gradients' 2×2 structure, per pixel, in grey levels²) says nothing about motion
_TEXTURE: Final = 4.0
#: a part of the frame (one of 8 x 8) that differs from the mean so far by this many
#: times what the sensor's noise gives has changed: the frames are not averaged
CHANGED: Final = 2.0
_BLOCKS: Final = 8
#: what rounding to whole grey levels (and the ISP's JPEG) adds to a difference of frames
_GREY_STEP: Final = 0.5
#: a scene that stayed still for this many frames and then changed is a phone arriving
#: (`FrameStack.arrived`)
SETTLED: Final = 3
#: a frame narrower than this is never stacked (its halves have too few pixels to compare)
SMALLEST: Final = 16


def _halved(frame: Frame | _F32) -> _F32:
    h, w = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
    f: _F32 = frame[:h, :w].astype(np.float32)
    out: _F32 = (f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]) * np.float32(0.25)
    return out


@functools.lru_cache(maxsize=4)
def _window(shape: tuple[int, ...]) -> _F32:
    """The Hann window phase correlation weighs a halved frame by (one per frame size,
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


def shift_between(before: Frame, after: Frame) -> tuple[int, int]:
    """How far the scene moved from `before` to `after`, in whole pixels (dy, dx):
    `after[y, x]` shows what `before[y - dy, x - dx]` showed."""
    return _shift(_halved(before), _halved(after))


def _shift(a: _F32, b: _F32) -> tuple[int, int]:
    if min(a.shape) < 4:
        return 0, 0
    window = _window(a.shape)
    fa = np.fft.rfft2((a - a.mean()) * window)
    fb = np.fft.rfft2((b - b.mean()) * window)
    cross = fb * np.conj(fa)
    cross /= np.maximum(np.abs(cross), 1e-9)
    r = np.fft.irfft2(cross, s=a.shape)
    y, x = np.unravel_index(int(np.argmax(r)), r.shape)
    py, px = _peak(r, int(y), int(x))
    h, w = a.shape
    py = py - h if py > h / 2 else py
    px = px - w if px > w / 2 else px
    return round(2 * py), round(2 * px)


def _moved(f: _F32, before: _F32, *, quarters: int = 2) -> float:
    """The largest motion, in pixels, left between `before` and `f` in any of the frame's
    `quarters`² parts that has texture enough to tell (0.0 if none has): one Lucas–Kanade
    step, the residual `f - before` against `f`'s gradient."""
    residual = f - before
    gy, gx = np.gradient(f)
    h, w = f.shape
    worst = 0.0
    for i in range(quarters):
        for j in range(quarters):
            part = (
                slice(i * h // quarters, (i + 1) * h // quarters),
                slice(j * w // quarters, (j + 1) * w // quarters),
            )
            x, y, r = gx[part], gy[part], residual[part]
            xx, xy, yy = float((x * x).sum()), float((x * y).sum()), float((y * y).sum())
            n = max(1, r.size)
            det = xx * yy - xy * xy
            smallest = (xx + yy) / 2 - np.sqrt(max(0.0, ((xx - yy) / 2) ** 2 + xy * xy))
            if smallest / n < _TEXTURE or det <= 0:
                continue
            bx, by = float((x * r).sum()), float((y * r).sum())
            dx = (yy * bx - xy * by) / det
            dy = (xx * by - xy * bx) / det
            worst = max(worst, float(np.hypot(dx, dy)))
    return worst


def _noise(small: _F32) -> float:
    """The sensor's noise in a halved frame (one standard deviation, grey levels), from its
    finest detail: the median absolute difference of neighbouring pixels (every other row).
    Texture adds to it, so it errs high, towards calling a frame still."""
    step = np.abs(np.diff(small[::2], axis=1))
    return float(np.median(step)) / 0.6745 / float(np.sqrt(2.0))


def changed(frame: Frame, before: Frame) -> float:
    """How much the most changed part of the frame changed since `before`, against what
    the sensor's noise alone would give (about 1 or less for a still scene)."""
    return _changed(_halved(frame), _halved(before))


def _changed(small: _F32, before: _F32) -> float:
    residual = np.abs(small - before)
    h, w = residual.shape
    bh, bw = h // _BLOCKS, w // _BLOCKS
    if not bh or not bw:
        return 0.0
    cells = residual[: bh * _BLOCKS, : bw * _BLOCKS].reshape(_BLOCKS, bh, _BLOCKS, bw)
    worst = float(cells.mean(axis=(1, 3)).max())
    # two frames' noise, differenced: sqrt(2) sigma, whose mean absolute value is 0.8 of it
    expected = 1.13 * _noise(small) + _GREY_STEP
    return worst / expected


def _agrees(small: _F32, before: _F32) -> bool:
    """Whether a halved frame shows what `before` showed: no part of it changed beyond
    the noise (a phone arrived, a hand came in) and nothing moved by `STILL_PX`."""
    return _changed(small, before) <= CHANGED and _moved(small, before) * 2 <= STILL_PX


_Image = TypeVar("_Image", Frame, _F32)


def shifted(image: _Image, dy: int, dx: int, fill: _Image) -> _Image:
    """`image` moved by (dy, dx); where it has nothing to show, `fill`'s pixels."""
    out = fill.copy()
    h, w = image.shape
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    out[yd, xd] = image[ys, xs]
    return out


class FrameStack:
    """The mean of the recent frames that agree with the newest, aligned to it.

    It keeps their sum, not the frames (one frame's worth of floats): past `depth` frames,
    the sum is scaled by (depth - 1) / depth before a frame is added, so the mean weighs
    the newest frame as one of `depth` and the older ones less and less.
    """

    def __init__(self, depth: int = DEPTH) -> None:
        if depth < 1:
            raise ValueError(f"a stack holds at least one frame, not {depth}")
        self.depth = depth
        self._sum: _F32 | None = None
        #: the sum halved (`_halved` is linear: the sum of the frames' halves), what a new
        #: frame is compared with
        self._small_sum: _F32 | None = None
        self._count = 0
        #: whether the last frame broke a scene that had been still for `SETTLED` frames:
        #: the empty counter the camera watched has a phone over it now (or the phone
        #: that lay still was picked up). A phone moving in a hand breaks no still scene.
        self.arrived = False

    def __len__(self) -> int:
        """How many frames the mean is of (at most `depth`)."""
        return self._count

    def reset(self) -> None:
        """Forget the frames (the next one starts a new stack)."""
        self._sum, self._small_sum, self._count = None, None, 0

    def add(self, frame: Frame) -> Frame:
        """Take the new frame; return the mean of it and the frames before it that agree
        with it (the frame itself when none does).

        A new frame is compared with the mean so far, not with the frame before it: a
        phone that creeps by less than the threshold a frame still leaves the mean once it
        has crept that far from it."""
        if frame.ndim != 2 or min(frame.shape) < SMALLEST:
            self.arrived = False
            self.reset()  # too small to tell motion from noise: never stacked
            return frame
        small = _halved(frame)
        sums = self._joined(frame, small)
        self.arrived = sums is None and self._count >= SETTLED
        if sums is None:
            self._sum, self._small_sum, self._count = frame.astype(np.float32), small, 1
            return frame
        total, small_total = sums
        if self._count >= self.depth:
            keep = np.float32((self.depth - 1) / self.depth)
            total *= keep
            small_total *= keep
            self._count = self.depth - 1
        total += frame
        small_total += small
        self._sum, self._small_sum, self._count = total, small_total, self._count + 1
        return self.mean()

    def _joined(self, frame: Frame, small: _F32) -> tuple[_F32, _F32] | None:
        """The sums (full and halved), aligned to the new frame if the scene moved by
        whole pixels; None if the frame does not agree with their mean (turned, tilted,
        moved by a part of a pixel, or another scene)."""
        total, small_total, n = self._sum, self._small_sum, np.float32(self._count)
        if total is None or small_total is None or total.shape != frame.shape:
            return None
        before = small_total / n
        if _agrees(small, before):
            return total, small_total
        dy, dx = _shift(before, small)
        if (dy, dx) == (0, 0) or max(abs(dy), abs(dx)) > MAX_SHIFT_PX:
            return None
        moved = shifted(total, dy, dx, frame * n)
        small_moved = _halved(moved)
        if not _agrees(small, small_moved / n):
            return None
        return moved, small_moved

    def mean(self) -> Frame:
        """The mean of the frames in the stack, rounded to grey levels."""
        if self._sum is None:
            raise ValueError("an empty stack has no mean")
        return np.ascontiguousarray(
            np.clip(self._sum / np.float32(self._count) + 0.5, 0, 255).astype(np.uint8)
        )
