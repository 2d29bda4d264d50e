"""Further decode passes for frames the plain pass reads nothing in, in plain numpy.

A phone at a till is in view for many frames, so the scan loop can afford a cheap pass on
every frame and the costlier ones only on frames where the cheap one found nothing, and
only as far as a per-frame time budget allows: the next frame carries on with the pass
after the last one tried. Each pass is an image operation the engine then reads (listed
here by kind; `PASSES` has the order they run in):

- ``half``: 2×2 averaging (a dim screen's noise, moiré, a big blurred code);
- ``sharpen``: unsharp masking (focus and motion blur, a small code);
- ``smooth``: a 3×3 box blur (a screen's pixel grid, cracks, sensor noise);
- ``flatten``: the frame minus its own coarse brightness (glare bands, uneven light);
- ``unscratch``: thin lines removed (a cracked screen protector's hairlines);
- ``enlarge``: 2× up (a small code far away has modules under 2 pixels);
- ``sharpen_enlarge``: sharpened, then 2× up (small, blurred and warped at once);
- ``normalize``: smoothed, then each pixel against the mean and spread of its
  neighbourhood (a dim code of little contrast, a dark-mode screen with a window
  reflected over part of it);
- ``zoom``: the frame's centre 3x up with a cubic, sharpened (codes under 2 pixels a
  module);
- ``sharpen_zoom``: sharpened, then zoomed (small and defocused at once);
- ``deblur``: a moving phone's smear measured (direction and length) and taken back by a
  Wiener filter (`qrpos.scanner.deblur`; a phone swung into view, a thumb holding it).
- ``locate``: a code whose finders the engine cannot find (smeared by a moving, tilted
  phone) found by its texture, its grid fitted and its modules drawn clean, a few ways
  side by side (`qrpos.scanner.locate`; the costliest pass, last).

Every further pass's scan also reads a code the engine finds but cannot decode from its
sampled grey modules (`qrpos.scanner.resample`). The further passes take, instead of the
frame, the mean of the phone's recent frames, each moved onto it tile by tile
(`qrpos.scanner.stack`).

numpy only: the kiosk's camera path does not load OpenCV (about 35 MB of memory).
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from qrpos.scanner.deblur import deblur
from qrpos.scanner.frames import Frame
from qrpos.scanner.locate import locate
from qrpos.scanner.pixels import box_sum, centre_box
from qrpos.scanner.stack import FrameStack

#: a pass: the frame in, the image to scan out
Transform = Callable[[Frame], Frame]
#: an engine's single scan of one image: raw bytes of each valid code
Scan = Callable[[Frame], list[bytes]]

_I32 = npt.NDArray[np.int32]
_U16 = npt.NDArray[np.uint16]


def _u8(a: npt.NDArray[np.floating[Any]] | _I32) -> Frame:
    return np.ascontiguousarray(np.clip(a, 0, 255).astype(np.uint8))


def half(frame: Frame) -> Frame:
    """2×2 block means: half the size, a quarter of the pixels."""
    h, w = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
    f = frame[:h, :w].astype(np.uint16)
    total = f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]
    return np.ascontiguousarray(((total + 2) >> 2).astype(np.uint8))


def _box3(f: _U16) -> _U16:
    """Sum over each pixel's 3×3 neighbourhood (edges repeated)."""
    return box_sum(f, 3)


def smooth(frame: Frame) -> Frame:
    """A 3×3 box blur."""
    return np.ascontiguousarray(((_box3(frame.astype(np.uint16)) + 4) // 9).astype(np.uint8))


def _blur81(frame: Frame) -> _U16:
    """Two 3×3 boxes (about a Gaussian of sigma 1.15), times 81: fits in 16 bits."""
    return _box3(_box3(frame.astype(np.uint16)))


def sharpen(frame: Frame) -> Frame:
    """Unsharp masking: frame + 2 × (frame − its blur)."""
    detail = frame.astype(np.float32) * 81 - _blur81(frame)
    return _u8(frame + detail * (2 / 81))


def flatten(frame: Frame) -> Frame:
    """The frame minus its brightness at the scale of a few modules, contrast stretched."""
    h, w = frame.shape
    step = 8
    hh, ww = h // step * step, w // step * step
    if not hh or not ww:
        return np.ascontiguousarray(frame)  # smaller than one cell: nothing to even out
    sums = frame[:hh, :ww].reshape(hh // step, step, ww // step, step).sum(axis=(1, 3))
    coarse = (_blur81(np.asarray(sums // (step * step), np.uint8)) // 81).astype(np.int16)
    level = np.repeat(np.repeat(coarse, step, axis=0), step, axis=1)
    if (hh, ww) != (h, w):
        level = np.pad(level, ((0, h - hh), (0, w - ww)), mode="edge")
    detail = frame.astype(np.int16) - level
    return _u8(((detail * 5) >> 1) + 128)


def _extreme3(f: Frame, pick: Callable[[Frame, Frame], Frame]) -> Frame:
    """`pick` (np.minimum or np.maximum) over each pixel's 3×3 neighbourhood."""
    p = np.pad(f, 1, mode="edge")
    rows = pick(pick(p[:-2], p[1:-1]), p[2:])
    return pick(pick(rows[:, :-2], rows[:, 1:-1]), rows[:, 2:])


def unscratch(frame: Frame) -> Frame:
    """Opening then closing (3×3): lines thinner than 3 pixels go, bright or dark."""
    opened = _extreme3(_extreme3(frame, np.minimum), np.maximum)
    return np.ascontiguousarray(_extreme3(_extreme3(opened, np.maximum), np.minimum))


def enlarge(frame: Frame) -> Frame:
    """2× up, each new pixel the mean of its neighbours (about bilinear)."""
    f = frame.astype(np.uint16)
    h, w = f.shape
    # straight into 8 bits (every mean of 8-bit pixels fits): no 16-bit copy of the output
    out = np.empty((2 * h, 2 * w), np.uint8)
    right = np.concatenate([f[:, 1:], f[:, -1:]], axis=1)
    down = np.concatenate([f[1:], f[-1:]], axis=0)
    diag = np.concatenate([right[1:], right[-1:]], axis=0)
    out[0::2, 0::2] = frame
    out[0::2, 1::2] = (f + right + 1) >> 1
    out[1::2, 0::2] = (f + down + 1) >> 1
    out[1::2, 1::2] = (f + right + down + diag + 2) >> 2
    return out


def sharpen_enlarge(frame: Frame) -> Frame:
    """Sharpened, then 2× up: a small code that is also blurred or warped (its modules
    under 2 pixels, their edges smeared) gets edges and pixels to read them by."""
    return enlarge(sharpen(frame))


#: `normalize` measures each pixel against the 3x3 cells of this many pixels around it
#: (24 pixels: a few modules of a code at 3-6 pixels a module; chosen on the field set's
#: tuning half, where windows of 11-31 pixels read the same misses and 41 none)
NORMALIZE_CELL = 8


def normalize(frame: Frame) -> Frame:
    """Smoothed (sensor noise), then each pixel's distance from the mean of the 24x24
    pixels around it, in units of their spread: a code of 18 grey levels between its
    light and dark modules, or half under a reflection, comes out at full contrast
    everywhere. The mean and spread are taken on 8x8 cells (integer sums) and blended
    between the cells' centres (bilinear), so the pass costs a few milliseconds, not the
    tens a per-pixel window would; a cell's own mean and spread applied flat to its pixels
    left steps at every cell's edge where the light changes fast (a reflection's rim),
    which zxing-cpp took for module edges: the tuning half's dark mode with a reflection,
    on the mean of six frames, 34 -> 38 of 40 read by this pass."""
    h, w = frame.shape
    step = NORMALIZE_CELL
    if h < step or w < step:
        return np.ascontiguousarray(frame)  # smaller than one cell: nothing to measure
    smoothed = smooth(frame)
    hh, ww = -(-h // step) * step, -(-w // step) * step
    if (hh, ww) != (h, w):  # the last cells take the edge pixels again
        smoothed = np.pad(smoothed, ((0, hh - h), (0, ww - w)), mode="edge")
    cells = smoothed.reshape(hh // step, step, ww // step, step)
    wide = cells.astype(np.uint16)  # 255² fits: squares need no wider type
    n = 9 * step * step
    total = box_sum(cells.sum(axis=(1, 3), dtype=np.int32), 3)
    squares = box_sum(np.square(wide).sum(axis=(1, 3), dtype=np.int32), 3)
    del wide
    mean = total.astype(np.float32) / n
    spread = np.sqrt(np.maximum(squares.astype(np.float32) / n - np.square(mean), 1.0))
    z = smoothed.astype(np.float32)
    z -= _between_cells(mean, step)
    z *= _between_cells(60.0 / spread, step)  # the gain blended, not the spread: one product
    z += 128.0
    return _u8(z[:h, :w])


def _between_cells(values: npt.NDArray[np.float32], step: int) -> npt.NDArray[np.float32]:
    """One value per `step` x `step` cell, as pixels: each pixel's value blended between
    the centres of the cells around it (bilinear; beyond the outer centres, the edge)."""
    offsets = (np.arange(step, dtype=np.float32) + 0.5) / step - 0.5  # from its centre
    weight = np.abs(offsets)
    toward = np.where(offsets < 0, -1, 1)
    rows, cols = values.shape
    # across first, on the cells' rows (a small array): each cell, `step` columns
    other = np.clip(np.arange(cols)[:, None] + toward[None, :], 0, cols - 1)
    across = values[:, :, None] + (values[:, other] - values[:, :, None]) * weight
    across = across.reshape(rows, cols * step)
    # then down, into the frame-sized output, whole rows at a time
    other = np.clip(np.arange(rows)[:, None] + toward[None, :], 0, rows - 1)
    out: npt.NDArray[np.float32] = across[other]
    out -= across[:, None, :]
    out *= weight[None, :, None]
    out += across[:, None, :]
    return out.reshape(rows * step, cols * step)


#: the share of each side `zoom` takes from the frame's centre: 3x up, half the width and
#: height give a frame of 2.25x the pixels (a quarter of what the whole frame would)
ZOOM_SHARE = 0.5
#: and at most this many rows and columns (a 640x480 frame's half): on a camera set to
#: 1280x720 the pass costs what it costs at 640x480, not four times its time and memory
ZOOM_MAX = (240, 320)
#: Catmull-Rom weights of the four pixels around a point a third, and two thirds, of the
#: way from the second to the third
_THIRD = np.array([-2.0, 21.0, 9.0, -1.0], np.float32) / 27
_TWO_THIRDS = _THIRD[::-1].copy()


def _cubic3(f: npt.NDArray[np.float32], axis: int) -> npt.NDArray[np.float32]:
    """3x as many rows (axis 0) or columns (axis 1), the new ones on a Catmull-Rom cubic
    through their neighbours."""
    f = np.moveaxis(f, axis, 0)  # a view: rows are the axis to enlarge
    p = np.pad(f, ((1, 2), (0, 0)), mode="edge")
    taps = (p[:-3], p[1:-2], p[2:-1], p[3:])
    shape = [f.shape[0], f.shape[1]]
    shape[0] *= 3
    out = np.empty(shape if axis == 0 else shape[::-1], np.float32)
    view = np.moveaxis(out, axis, 0)
    view[0::3] = f
    for phase, weights in ((1, _THIRD), (2, _TWO_THIRDS)):
        row = view[phase::3]
        np.multiply(taps[0], weights[0], out=row)
        for tap, weight in zip(taps[1:], weights[1:], strict=True):
            row += tap * weight
    return out


def _binomial3(f: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each pixel's 3x3 neighbourhood weighted 1-2-1 each way (edges repeated): about a
    Gaussian of 0.7 pixels."""
    p = np.pad(f, 1, mode="edge")
    rows = p[:-2] + 2 * p[1:-1] + p[2:]
    # float32 already (no copy); numpy 2's stubs read `2 * float32` as float64
    out: npt.NDArray[np.float32] = (rows[:, :-2] + 2 * rows[:, 1:-1] + rows[:, 2:]).astype(
        np.float32, copy=False
    )
    out *= np.float32(1 / 16)
    return out


def zoom(frame: Frame) -> Frame:
    """The centre of the frame unsharp-masked (against a 0.7-pixel blur, the scale of a
    module under 2 pixels), then 3x up (Catmull-Rom): a code under 2 pixels a module gets
    modules of 4-6 pixels with edges to find them by. Sharpened before it is enlarged,
    where it costs a ninth (enlarging is linear, so it is about the same image as
    sharpening the enlarged one against a 2-pixel blur, as zoom first did: 3.9 -> 1.7 ms
    here, the field set's tuning half read alike); the enlarged image is the only
    frame-sized float buffer."""
    y0, x0, ch, cw = _centre(frame.shape)
    return _zoomed(frame[y0 : y0 + ch, x0 : x0 + cw])


def _centre(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """Where `zoom` looks: top, left, height and width of the frame's centre."""
    return centre_box(shape, ZOOM_MAX, ZOOM_SHARE)


def _zoomed(centre: Frame) -> Frame:
    crop = centre.astype(np.float32)
    sharp = crop - _binomial3(crop)
    sharp *= 2.0
    sharp += crop
    up = _cubic3(_cubic3(sharp, 0), 1)
    up += 0.5
    np.clip(up, 0, 255, out=up)
    return up.astype(np.uint8)


#: how far `sharpen` looks around a pixel (two 3x3 boxes)
_SHARPEN_REACH = 2


def sharpen_zoom(frame: Frame) -> Frame:
    """Sharpened, then `zoom`: a small code that is also defocused (its modules under 2
    pixels and smeared into each other) gets its edges back before the cubic spreads them.
    Only the centre `zoom` takes is sharpened (with the pixels around it that `sharpen`
    reads): the same image as `zoom(sharpen(frame))`, bit for bit, at a quarter of the
    sharpening's cost."""
    h, w = frame.shape
    y0, x0, ch, cw = _centre(frame.shape)
    top, left = max(0, y0 - _SHARPEN_REACH), max(0, x0 - _SHARPEN_REACH)
    bottom = min(h, y0 + ch + _SHARPEN_REACH)
    right = min(w, x0 + cw + _SHARPEN_REACH)
    sharp = sharpen(frame[top:bottom, left:right])
    return _zoomed(sharp[y0 - top : y0 - top + ch, x0 - left : x0 - left + cw])


#: every pass by name, in the order a frame tries them: the order that read the most on
#: the first frame of the hard set and the field set's tuning half, at this core's speed
#: and 4x slower, without reading less of the hard set (`benchmarks/pass_order.py`
#: measures each pass and searches; 2026-11-26: hard set 98.5 -> 98.8 %, tuning half
#: 86.4 -> 90.0 % on the first frame, measured by `hardset.py` and `fieldset.py`; searched
#: again with resampling and `sharpen_zoom`: tuning half 92.9 -> 93.2 %, hard set 99.8 %;
#: and with `zoom` sharpening before it enlarges: the same rates, 2x cheaper zooms; and
#: with `deblur`, searched again: tuning half 93.4 -> 94.1 % on the first frame, hard set
#: 99.8 -> 100 %, at 1x; the search's replay said 92.9 -> 94.1 % and 93.6 % at 4x).
#: `locate` is last: the search put it sixth (replay 94.6 -> 95.2 %), but measured on
#: the tuning half that read 94.5 -> 93.9 % of first frames at 4x, where it costs a
#: frame's whole budget, and the within-6-frames rates alike
PASSES: dict[str, Transform] = {
    "smooth": smooth,
    "enlarge": enlarge,
    "unscratch": unscratch,
    "sharpen_zoom": sharpen_zoom,
    "normalize": normalize,
    "deblur": deblur,
    "sharpen_enlarge": sharpen_enlarge,
    "flatten": flatten,
    "zoom": zoom,
    "sharpen": sharpen,
    "half": half,
    "locate": locate,
}
DEFAULT_PASSES: tuple[str, ...] = tuple(PASSES)
#: how long one empty frame may spend on further passes: about a third of a 30 fps frame
#: interval. Measured on the hard set (`benchmarks/hardset.py`, this machine, idle): 8 ms
#: read 94.6 % of scenes on their first frame, 12 ms 96.2 %, every pass 97.9 %; the median
#: frame is unchanged (the plain pass finds most codes). See hardware.md for a Pi.
PASS_BUDGET_MS = 12.0
#: the budget chosen at run time is this many plain passes (`PassPlan`, budget "auto"):
#: 12 ms over the 0.94 ms median plain pass of the hard set measured here (idle, 2026-11-26,
#: `benchmarks/hardset.py`), so a slower core (a Pi 4 is several times slower per core)
#: gives each empty frame the same passes, not fewer
BUDGET_PER_PLAIN = 12.0
#: the run-time budget's ceiling: one and a half frame intervals at 30 fps. An empty frame
#: may make the loop skip the next camera frame, never more; the phone is in view for
#: 15-30 frames and the next frame carries on with the passes after the last one tried
PASS_BUDGET_CAP_MS = 50.0
#: plain passes the run-time budget is the median of (about a second at 30 fps)
_PLAIN_WINDOW = 31
#: `budget_ms="auto"`: chosen at run time from the measured speed of the plain pass
AUTO: Final = "auto"


def budget_for(plain_ms: float) -> float:
    """The per-frame budget for further passes on a core whose plain pass takes
    `plain_ms` (its recent median): `BUDGET_PER_PLAIN` plain passes, never under
    `PASS_BUDGET_MS` (the budget measured here) nor over `PASS_BUDGET_CAP_MS`."""
    return min(PASS_BUDGET_CAP_MS, max(PASS_BUDGET_MS, BUDGET_PER_PLAIN * plain_ms))


class PassPlan:
    """The plain scan on every frame, further passes on frames it finds nothing in.

    `budget_ms` bounds one frame's extra passes: at least one is tried, then more while
    the time spent on the frame stays under the budget; the next empty frame starts at
    the pass after the last one tried, so a phone held up for a few frames meets them all.
    `budget_ms=None` tries every pass on every empty frame; `budget_ms="auto"` (the
    kiosk's) sizes the budget from the median of the recent plain passes on this device
    (`budget_for`). `clock` is what times them (a benchmark slows it down to stand for a
    slower core). `further` scans the further passes' images (by default `scan` does):
    the engine's costlier reading of a code it found but could not decode belongs there,
    so the plain pass stays the one cheap read the budget is measured by.

    With `stack` (the default), the further passes read the mean of the recent frames the
    plain pass read nothing in, each moved onto the mean tile by tile (`FrameStack`): less
    sensor noise on each frame it is held up. A read, or `reset`, starts a new stack. A
    scene that stayed still and then changed (the counter the camera watched while armed,
    then a phone over it: `FrameStack.arrived`) starts the passes from the first again,
    the order searched for a first frame, not where the empty frames' rotation stopped.
    """

    def __init__(
        self,
        scan: Scan,
        passes: Sequence[str] = DEFAULT_PASSES,
        *,
        budget_ms: float | Literal["auto"] | None = AUTO,
        clock: Callable[[], float] = time.perf_counter,
        further: Scan | None = None,
        stack: bool = True,
    ) -> None:
        unknown = [p for p in passes if p not in PASSES]
        if unknown:
            raise ValueError(f"unknown decode pass(es) {unknown}: choose from {list(PASSES)}")
        self._scan = scan
        self._further = further or scan
        self.passes = tuple(passes)
        self.budget_ms = budget_ms
        self._clock = clock
        self._next = 0
        #: the passes the last frame went through, "plain" first (for the benchmark)
        self.last_passes: list[str] = []
        #: how long the last frame's plain pass took (the scan loop sizes frames by it)
        self.plain_ms = 0.0
        self._plain_recent: deque[float] = deque(maxlen=_PLAIN_WINDOW)
        #: the recent frames the plain pass read nothing in, moved onto one another
        self.stack: FrameStack | None = FrameStack() if stack else None

    @property
    def plain_median_ms(self) -> float | None:
        """The median of the recent plain passes (None before the first), on `clock`."""
        return statistics.median(self._plain_recent) if self._plain_recent else None

    @property
    def frame_budget_ms(self) -> float | None:
        """This frame's budget for further passes: fixed, None (every pass) or, "auto",
        chosen from the recent plain passes (`PASS_BUDGET_MS` before any was timed)."""
        if self.budget_ms != AUTO:
            return self.budget_ms
        plain = self.plain_median_ms
        return PASS_BUDGET_MS if plain is None else budget_for(plain)

    def reset(self) -> None:
        """Start the next frame's extra passes from the first one again, on a new stack."""
        self._next = 0
        if self.stack is not None:
            self.stack.reset()

    def decode(self, frame: Frame) -> list[bytes]:
        """The raw bytes of every code found by the first pass that finds any."""
        started = self._clock()
        self.last_passes = ["plain"]
        found = self._scan(frame)
        self.plain_ms = (self._clock() - started) * 1000.0
        self._plain_recent.append(self.plain_ms)
        if found or not self.passes:
            if self.stack is not None:
                self.stack.reset()  # read: the next phone is another one
            return found
        budget_ms = self.frame_budget_ms
        image = frame if self.stack is None else self.stack.add(frame)
        if self.stack is not None and self.stack.arrived:
            self._next = 0  # a still scene changed: a phone arrived, the best passes first
        for _ in range(len(self.passes)):
            name = self.passes[self._next]
            self._next = (self._next + 1) % len(self.passes)
            self.last_passes.append(name)
            found = self._further(PASSES[name](image))
            if found:
                if self.stack is not None:
                    self.stack.reset()
                return found
            spent_ms = (self._clock() - started) * 1000.0
            if budget_ms is not None and spent_ms >= budget_ms:
                break
        return []
