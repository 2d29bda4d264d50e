"""Reading a QR code the engine found but could not decode: sample its modules ourselves.

zxing-cpp binarizes the whole image first and samples the code's grid on the result. A
code of 1.3-2 pixels a module, blurred, or under JPEG, loses modules at that threshold: the
engine finds the three finders, reads the format, and then fails the error correction
(a "checksum error"). It still says where the code is (its four corners) and its version.
This module takes it from there, on the grey values:

1. **Fit the grid.** The corners the engine gives are off by a fraction of a module, and
   at these sizes a fraction of a module is every module on the far side. The known
   patterns of every QR code (three finders, two timing lines, the alignment pattern from
   version 2 on) are sampled through the homography of the four corners; the corners are
   moved, a step at a time, towards the fit where the known dark modules are darkest
   against the known light ones (`refine`). All 24 one-step moves (each corner alone,
   the whole code shifted, grown, turned) are tried at once.
2. **Sample after fitting, binarize after sampling.** Each module's grey value is read at
   its centre (bilinear), and compared with the mean of the modules around it, so a
   reflection or a shadow over half the code moves the threshold with it (`modules`).
3. **Read it again.** The modules are drawn as a clean code (4 pixels a module, a quiet
   zone) and handed back to the engine, which does the format, the error correction and
   the bytes (`clean_codes`). Nothing here decides what a code says: a read still has to
   pass the engine's Reed-Solomon check, so a wrong grid gives no code, not a wrong one.

Under two pixels a module the blur makes both steps drift: `qrpos.scanner.blurmodel`
fits and reads such a code again through a model of its blur, and is where the decoder
and `locate` come in (`blurmodel.images`, `blurmodel.readings`).

numpy only, like the passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from qrpos.scanner.frames import Frame
from qrpos.scanner.pixels import box_sum, homographies

_F64 = npt.NDArray[np.float64]
_Bool = npt.NDArray[np.bool_]
#: a code's four corners: top left, top right, bottom right, bottom left (the code's own)
Corners = Sequence[tuple[float, float]] | _F64

#: the steps `refine` moves a corner by, in modules: coarse, then finer (to 1/16 module:
#: at 1.5 pixels a module a tenth of a pixel)
REFINE_STEPS = (0.5, 0.25, 0.12, 0.06)
#: at most this many moves a step size (each move a batch of 24 fits)
_REFINE_ROUNDS = 30
#: how the modules are thresholded, each tried in turn: (sharpening, radius). The module
#: values are first sharpened against their 3x3 neighbourhood by this much (a blurred
#: code's lone dark module is lighter than its dark neighbours), then each is compared
#: with the mean of the (2r+1)^2 modules around it. Chosen on the field set's tuning half
#: (`benchmarks/fieldset.py`): no one setting read more than 15 of the 18 codes any
#: setting read, these five read all 18.
THRESHOLDS = ((0.5, 5), (0.0, 3), (1.0, 4), (2.5, 4), (0.5, 7))
#: pixels a module and quiet-zone modules of the clean code handed back to the engine
_SCALE = 4
_QUIET = 4
#: QR versions this module reads (1-40)
MAX_VERSION = 40


def side_of(version: int) -> int:
    """Modules on a side of a QR code of `version`."""
    return 17 + 4 * version


def _alignment_centres(version: int) -> list[int]:
    """The row (and column) numbers of the alignment patterns' centres (ISO 18004 Annex E)."""
    if version < 2:
        return []
    n = side_of(version)
    count = version // 7 + 2
    step = 26 if version == 32 else (version * 4 + count * 2 + 1) // (count * 2 - 2) * 2
    return [6] + [n - 7 - i * step for i in range(count - 2, -1, -1)]


@lru_cache(maxsize=8)
def function_patterns(version: int) -> tuple[_Bool, _Bool]:
    """(known, dark): the modules every code of `version` has in the same place (finders
    with their separators, timing lines, alignment patterns), and which of them are dark."""
    n = side_of(version)
    known = np.zeros((n, n), bool)
    dark = np.zeros((n, n), bool)
    ring = np.maximum(*np.abs(np.mgrid[-4:5, -4:5]))  # 9x9: the finder and its separator
    finder = (ring != 2) & (ring != 4)
    for top, left in ((0, 0), (0, n - 7), (n - 7, 0)):
        y0, x0 = max(0, top - 1), max(0, left - 1)
        y1, x1 = min(n, top + 8), min(n, left + 8)
        known[y0:y1, x0:x1] = True
        dark[y0:y1, x0:x1] = finder[y0 - top + 1 : y1 - top + 1, x0 - left + 1 : x1 - left + 1]
    timing = np.arange(8, n - 8)
    known[6, timing] = known[timing, 6] = True
    dark[6, timing] = dark[timing, 6] = timing % 2 == 0
    centres = _alignment_centres(version)
    square = np.maximum(*np.abs(np.mgrid[-2:3, -2:3])) != 1
    corners = {(6, 6), (6, n - 7), (n - 7, 6)}
    for cy in centres:
        for cx in centres:
            if (cy, cx) in corners:  # where a finder is: no alignment pattern there
                continue
            known[cy - 2 : cy + 3, cx - 2 : cx + 3] = True
            dark[cy - 2 : cy + 3, cx - 2 : cx + 3] = square
    known.flags.writeable = dark.flags.writeable = False
    return known, dark


def grid_maps(corners: _F64, n: int) -> _F64:
    """(k, 3, 3): for each of k sets of four corners (k, 4, 2), the map from module
    coordinates (0..n, the code's top-left corner at 0,0) to the image."""
    return homographies([(0.0, 0.0), (n, 0.0), (n, n), (0.0, n)], corners)


def sample(image: Frame, maps: _F64, points: _F64) -> _F64:
    """(k, m): the image's grey value (bilinear) at m points in module coordinates (m, 2)
    through each of the k maps."""
    h, w = image.shape
    p = maps[:, :, :2] @ points.T + maps[:, :, 2:]  # (k, 3, m)
    z = p[:, 2]
    z[np.abs(z) < 1e-9] = 1e-9
    # a point off the frame reads the frame's edge; one that is no number at all (corners
    # far beyond any frame) reads its first pixel: no fit ever prefers such corners
    xy = p[:, :2] / z[:, None]
    xy[~np.isfinite(xy)] = 0.0
    np.maximum(xy, 0.0, out=xy)
    np.minimum(xy, np.array([w - 1.001, h - 1.001])[None, :, None], out=xy)
    corner = xy.astype(np.intp)
    part = (xy - corner).astype(np.float32)
    fx, fy = part[:, 0], part[:, 1]
    flat = image.ravel()
    at = corner[:, 1] * w + corner[:, 0]
    # in 32-bit floats: a grey level to 1e-5, at half the memory traffic of 64
    top = flat[at].astype(np.float32)
    top += (flat[at + 1] - top) * fx
    bottom = flat[at + w].astype(np.float32)
    bottom += (flat[at + w + 1] - bottom) * fx
    bottom -= top
    bottom *= fy
    top += bottom
    out: _F64 = top.astype(np.float64)
    return out


def _fit(samples: _F64, dark: _Bool) -> _F64:
    """How well each row of samples of the known modules shows them: the gap between the
    light and the dark ones over their spread (either way round: dark mode is inverted)."""
    weights = np.stack([dark, ~dark], axis=1).astype(np.float64)  # (m, 2)
    counts = weights.sum(axis=0)
    means = samples @ weights / counts  # (k, 2)
    squares = np.square(samples) @ weights / counts
    variances = np.maximum(squares - np.square(means), 0.0)
    spread = np.sqrt(variances.mean(axis=1)) + 1.0
    out: _F64 = np.abs(means[:, 1] - means[:, 0]) / spread
    return out


def _moves() -> _F64:
    """The moves `refine` tries at each step, in modules: each corner alone along x and
    y, both ways (16), and the whole code moved, grown and turned (8): a single corner's
    moves alone creep along a ridge where the code sits shifted as a whole."""
    single = np.zeros((16, 4, 2))
    for i in range(8):
        single[2 * i, i // 2, i % 2] = 1.0
        single[2 * i + 1, i // 2, i % 2] = -1.0
    outward = np.array([(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)])
    turn = outward[:, ::-1] * np.array([-1.0, 1.0])
    whole = [np.tile(d, (4, 1)) for d in ((1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0))]
    whole += [outward, -outward, turn, -turn]
    return np.concatenate([single, np.array(whole)])


MOVES = _moves()


def refine(
    image: Frame, corners: Corners, version: int, steps: Sequence[float] = REFINE_STEPS
) -> _F64:
    """The four corners (4, 2) moved to where the code's known patterns fit best, by
    `steps` (in modules), each while a move fits better.

    Raises `numpy.linalg.LinAlgError` for corners no code can have (three in a line)."""
    return fitted(image, corners, version, steps)[0]


@lru_cache(maxsize=8)
def _known_centres(version: int) -> tuple[_F64, _Bool]:
    """(points, dark): the centre of each module every code of `version` has (m, 2), in
    module coordinates, and which of them are dark.

    The centres only: sampling towards each module's edges as well pins a sharp code's
    corners closer (any corners that keep every centre inside its module fit a sharp code
    alike) but cost 5x and read fewer of the field set's tuning half (16 vs 18 codes): on
    the blurred codes this is for, the centres alone have the slope."""
    known, dark = function_patterns(version)
    rows, cols = np.nonzero(known)
    points = np.stack([cols + 0.5, rows + 0.5], axis=1).astype(np.float64)
    is_dark = dark[rows, cols]
    points.flags.writeable = is_dark.flags.writeable = False
    return points, is_dark


def fits(image: Frame, corners: _F64, version: int) -> _F64:
    """(k,): how well the known patterns of a code of `version` fit at each of k sets
    of four corners (k, 4, 2), as `fitted` scores them. Raises `numpy.linalg.LinAlgError`
    for corners no code can have (three in a line)."""
    points, is_dark = _known_centres(version)
    return _fit(sample(image, grid_maps(corners, side_of(version)), points), is_dark)


def fitted(
    image: Frame, corners: Corners, version: int, steps: Sequence[float] = REFINE_STEPS
) -> tuple[_F64, float]:
    """`refine`'s corners, and how well the code's known patterns fit there: the gap
    between their dark and light modules over their spread, larger for a better fit (0
    for no code; the smeared, tilted phones `locate` reads score about 0.8-3, the sharp
    synthetic codes of its tests 4-55)."""
    n = side_of(version)
    points, is_dark = _known_centres(version)
    start = np.array(corners, np.float64).reshape(4, 2)
    module = max(1e-3, float(np.linalg.norm(start[1] - start[0])) / n)

    def score(sets: _F64) -> _F64:
        return _fit(sample(image, grid_maps(sets, n), points), is_dark)

    return climb(score, start, module, steps)


def climb(
    score: Callable[[_F64], _F64], start: _F64, module: float, steps: Sequence[float]
) -> tuple[_F64, float]:
    """Corners (4, 2) moved from `start` by each of `steps` (in modules of `module`
    pixels) while one of the `MOVES` scores better, and their score: `score` takes k sets
    of corners (k, 4, 2) and gives their k scores, higher better. A move that puts three
    corners in a line ends that step. Raises `numpy.linalg.LinAlgError` when `start`
    itself is such corners."""
    best = start
    current = float(score(best[None])[0])
    for step in steps:
        for _ in range(_REFINE_ROUNDS):
            tried = best[None] + MOVES * (step * module)
            try:
                scores = score(tried)
            except np.linalg.LinAlgError:  # a move put three corners in a line
                break
            pick = int(np.argmax(scores))
            if scores[pick] <= current:
                break
            best, current = tried[pick], float(scores[pick])
    return best, current


def modules(image: Frame, corners: Corners, version: int) -> _F64:
    """(n, n): each module's grey value, sampled at its centre through the corners."""
    n = side_of(version)
    centres = np.arange(n) + 0.5
    xs, ys = np.meshgrid(centres, centres)
    points = np.stack([xs.ravel(), ys.ravel()], axis=1)
    maps = grid_maps(np.array(corners, np.float64).reshape(1, 4, 2), n)
    return sample(image, maps, points).reshape(n, n)


def local_mean(grid: _F64, radius: int) -> _F64:
    """The mean of each module's (2r+1)^2 neighbourhood (edges repeated)."""
    side = 2 * radius + 1
    out = box_sum(grid, side)
    out /= side * side
    return out


def draw(dark: _Bool, version: int) -> Frame:
    """A clean code of these modules: black on white, `_SCALE` pixels a module, a quiet
    zone, and the patterns every code of `version` has drawn as the standard has them
    (a module of a finder read wrong is no information, and can stop the engine). A
    light-on-dark code (a phone in dark mode) is drawn dark on light."""
    known, fixed = function_patterns(version)
    if (dark[known] == fixed[known]).mean() < 0.5:  # light on dark (dark mode): turned
        dark = ~dark
    dark = np.where(known, fixed, dark)
    bordered = np.pad(dark, _QUIET, constant_values=False)
    pixels = np.where(bordered, np.uint8(0), np.uint8(255))
    return np.ascontiguousarray(np.repeat(np.repeat(pixels, _SCALE, axis=0), _SCALE, axis=1))


def clean_codes(image: Frame, corners: Corners, version: int) -> Iterator[Frame]:
    """Clean codes of the grid at `corners` (already fitted), thresholded a few ways."""
    try:
        with np.errstate(all="ignore"):
            grid = modules(image, corners, version)
    except np.linalg.LinAlgError:  # corners in a line: not a code's
        return
    for sharpen, radius in THRESHOLDS:
        sharp = grid + sharpen * (grid - local_mean(grid, 1)) if sharpen else grid
        yield draw(sharp < local_mean(sharp, radius), version)
