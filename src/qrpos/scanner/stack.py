"""Consecutive frames of a phone in front of the camera, averaged: the sensor's noise falls
as 1/√n.

A code of 1.5 pixels a module under JPEG, or one smeared by a module's width of motion,
is read or lost by a few grey levels; the camera's noise is of that size. A phone held up
to the till stays in view for many frames, and the mean of those frames shows the same
code with less noise than any one of them, as long as each frame is added where it
belongs. `FrameStack.add` takes each new frame and returns the mean of the frames so far
that agree with it, the new one moved onto them:

1. **whether it stayed**: the new frame against the mean so far (both halved): no part of
   the frame (8 × 8 of them) may differ by more than `CHANGED` times what the sensor's
   noise gives, and what motion is left, estimated from the image's gradients in each
   quarter of the frame (one Lucas–Kanade step), must stay under `STILL_PX`. A frame that
   stayed is added as it is.
2. **where each part of it moved**, if it did not stay: a phone in a hand moves and turns
   by a tremor's part of a pixel between frames, over a counter that does not move, so no
   one shift fits the frame. The whole frame's motion is found first, coarsely (phase
   correlation of the frames quartered, numpy's FFT: a fraction of a millisecond); if it
   is over half of `MAX_SHIFT_PX`, the mean is moved by it in whole pixels (no
   resampling). Then the frame is cut into `TILE` × `TILE` tiles, and each tile's shift
   against the mean is found to a part of a pixel, from the coarse one (Lucas–Kanade,
   `_ROUNDS` rounds on the halved frames, each round the tile moved by the shift so far;
   a tile that does not settle, or has too little texture to tell, takes the median of
   those that did). Each tile of the new frame is moved by its own shift (bilinear) and
   added to the mean's tile if it then agrees with it (within `CHANGED` times the noise,
   and settled to `STILL_PX`); a tile that does not (the phone's edge over the counter, a
   thumb that came in) starts its own mean again from the moved frame. A frame most of
   whose tiles do not agree (another phone, the counter without one) starts a new mean.

A frame moved onto the mean is resampled once, when it is added; the mean itself is
never resampled, so a part-of-a-pixel error is not compounded frame after frame; it
stays where the first frame lay (moved by whole pixels only). The stack is what the further
passes read (`PassPlan`). A scene that stayed still for `SETTLED` frames and then changed
is a phone arriving (`arrived`): the plan starts its passes from the first again.

numpy only, like the passes: the kiosk's camera path does not load OpenCV.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from qrpos.scanner.frames import Frame
from qrpos.scanner.motion import (
    TILE,
    _agrees,
    _expected,
    _offset,
    _padded,
    shifted,
    tile_shifts,
    tile_warp,
)
from qrpos.scanner.pixels import centre_box, halved

_F32 = npt.NDArray[np.float32]
_Bool = npt.NDArray[np.bool_]

#: frames in a mean at most (0.27 s at 30 fps): noise falls by √8 ≈ 2.8
DEPTH: Final = 8
#: the furthest a phone may move from the mean and still be stacked, in pixels (the mean
#: is moved, by whole pixels, when it moved over half of this)
MAX_SHIFT_PX: Final = 16
#: a scene that stayed still for this many frames and then changed is a phone arriving
#: (`FrameStack.arrived`)
SETTLED: Final = 3
#: the most of a frame the stack averages (rows, columns): of a bigger camera frame, its
#: centre, so a camera set to 1280x720 costs what 640x480 does (4.5 ms and 5.7 MB of
#: scratch a hand-held frame here, not three times that)
STACK_MAX: Final = (480, 640)
#: a frame narrower than this is never stacked (its halves have too few pixels to compare)
SMALLEST: Final = 16


class FrameStack:
    """The mean of the recent frames that agree with the newest, each moved onto the first.

    It keeps their sum, not the frames (one frame's worth of floats), and how many frames
    each tile's sum holds: past `depth` frames, a tile's sum is scaled by (depth - 1) /
    depth before a frame is added, so the mean weighs the newest frame as one of `depth`
    and the older ones less and less.
    """

    def __init__(self, depth: int = DEPTH) -> None:
        if depth < 1:
            raise ValueError(f"a stack holds at least one frame, not {depth}")
        self.depth = depth
        #: the frames' sum, in whole tiles (beyond the frame: its edge repeated)
        self._sum: _F32 | None = None
        #: how many frames each tile's sum holds
        self._counts: _F32 = np.zeros((0, 0), np.float32)
        #: the mean halved, what a new frame is compared with
        self._small: _F32 = np.zeros((0, 0), np.float32)
        self._shape: tuple[int, ...] = ()
        #: the frame's tiles, down and across (the last ones reach past its edge)
        self._tiles = (0, 0)
        #: frames in a row that stayed (step 1 of the module's doc), the first included
        self._still = 0
        #: whether the last frame broke a scene that had been still for `SETTLED` frames:
        #: the empty counter the camera watched has a phone over it now (or the phone
        #: that lay still was picked up). A phone moving in a hand breaks no still scene.
        self.arrived = False

    def __len__(self) -> int:
        """How many frames the mean is of (at most `depth`; where tiles differ, what most
        of them hold)."""
        if self._sum is None:
            return 0
        return int(np.median(self._counts))

    def tile_counts(self) -> npt.NDArray[np.float32]:
        """How many frames each tile's mean holds (`TILE` × `TILE` tiles, down and across;
        empty before the first frame)."""
        if self._sum is None:
            return np.zeros((0, 0), np.float32)
        return self._counts.copy()

    def reset(self) -> None:
        """Forget the frames (the next one starts a new stack)."""
        self._sum, self._shape, self._still = None, (), 0

    def add(self, frame: Frame) -> Frame:
        """Take the new frame; return the mean of it and the frames before it that agree
        with it, tile by tile (the frame itself when none does). Of a frame larger than
        `STACK_MAX`, its centre of that size (the rest as the frame shows it)."""
        if frame.ndim != 2 or min(frame.shape) < SMALLEST:
            self.arrived = False
            self.reset()  # too small to tell motion from noise: never stacked
            return frame
        top, left, h, w = centre_box(frame.shape, STACK_MAX)
        if (h, w) == frame.shape:
            return self._add(frame)
        centre = self._add(np.ascontiguousarray(frame[top : top + h, left : left + w]))
        out = frame.copy()
        out[top : top + h, left : left + w] = centre
        return out

    def _add(self, frame: Frame) -> Frame:
        small = halved(frame)
        if self._sum is None or self._shape != frame.shape:
            self.arrived = False
            return self._start(frame, small)
        expected = _expected(small)
        if _agrees(small, self._small, expected):
            self.arrived = False
            self._still += 1
            # typed as the other branch's: numpy 2's stubs would pin this one's rank
            agree: _Bool = np.ones(self._tiles, bool)
            moved = _padded(frame, self._tiles, TILE)
        else:
            self.arrived = self._still >= SETTLED
            self._still = 1
            moved, agree = self._registered(frame, small, expected)
            if agree.mean() < 0.5:
                # most of the frame shows something else (another phone, the counter
                # without one): a new scene, a new mean
                return self._start(frame, small)
        return self._added(moved, agree)

    def _start(self, frame: Frame, small: _F32) -> Frame:
        tiles = (-(-frame.shape[0] // TILE), -(-frame.shape[1] // TILE))
        self._sum = _padded(frame, tiles, TILE)
        self._counts = np.ones(tiles, np.float32)
        self._small, self._shape, self._tiles, self._still = small, frame.shape, tiles, 1
        return frame

    def _registered(self, frame: Frame, small: _F32, expected: float) -> tuple[_F32, _Bool]:
        """The new frame moved onto the mean tile by tile, and which tiles then agree."""
        assert self._sum is not None
        tiles = self._tiles
        half = TILE // 2
        # the whole frame's motion first, coarsely (the frames quartered: a fraction of a
        # millisecond), for the tiles to start from
        qy, qx = _offset(halved(self._small), halved(small))
        sy, sx = 4 * qy, 4 * qx  # in pixels of the frame
        if max(abs(sy), abs(sx)) > MAX_SHIFT_PX:
            sy, sx = 0.0, 0.0
        if max(abs(sy), abs(sx)) > MAX_SHIFT_PX / 2:
            # far for the tiles to start from: the mean moved, by whole pixels (no
            # resampling). The mean, not the sum: each tile's count stays where it is, and
            # a sum moved across tiles of other counts would change their brightness
            whole = round(sy), round(sx)
            mean = shifted(self._mean(self._sum), *whole, _padded(frame, tiles, TILE))
            self._sum = self._summed(mean)
            self._small = halved(mean[: self._shape[0], : self._shape[1]])
            sy, sx = sy - whole[0], sx - whole[1]
        dy, dx, agree = tile_shifts(
            _padded(self._small, tiles, half),
            _padded(small, tiles, half),
            half,
            expected,
            start=(sy / 2, sx / 2),
        )
        return tile_warp(_padded(frame, tiles, TILE), 2 * dy, 2 * dx, TILE), agree

    def _added(self, moved: _F32, agree: _Bool) -> Frame:
        """Each agreeing tile of `moved` (the new frame moved onto the mean) added to the
        mean's; the others start again from it (moved too: the mean's tiles stay where
        their neighbours are)."""
        assert self._sum is not None
        ty, tx = self._tiles
        counts = self._counts
        full = counts >= self.depth
        keep = np.float32((self.depth - 1) / self.depth)
        scale = np.where(agree, np.where(full, keep, np.float32(1.0)), np.float32(0.0))
        self._counts = np.where(agree, np.where(full, counts - 1, counts) + 1, 1).astype(np.float32)
        total = self._sum.reshape(ty, TILE, tx, TILE)
        total *= scale.astype(np.float32)[:, None, :, None]
        total += moved.reshape(total.shape)
        mean = self._mean(self._sum)
        self._small = halved(mean[: self._shape[0], : self._shape[1]])
        return self._rounded(mean)

    def mean(self) -> Frame:
        """The mean of the frames in the stack, rounded to grey levels."""
        if self._sum is None:
            raise ValueError("an empty stack has no mean")
        return self._rounded(self._mean(self._sum))

    def _mean(self, total: _F32) -> _F32:
        """`total` (a sum in whole tiles) over each tile's count."""
        ty, tx = self._tiles
        tiles = total.reshape(ty, TILE, tx, TILE) / self._counts[:, None, :, None]
        out: _F32 = tiles.reshape(ty * TILE, tx * TILE)
        return out

    def _summed(self, mean: _F32) -> _F32:
        """`mean` (in whole tiles) times each tile's count: the sum it is the mean of."""
        ty, tx = self._tiles
        tiles = mean.reshape(ty, TILE, tx, TILE) * self._counts[:, None, :, None]
        out: _F32 = tiles.reshape(ty * TILE, tx * TILE)
        return out

    def _rounded(self, mean: _F32) -> Frame:
        h, w = self._shape
        return np.ascontiguousarray(np.clip(mean[:h, :w] + 0.5, 0, 255).astype(np.uint8))
