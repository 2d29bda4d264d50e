"""Reading a small, blurred code through a model of its blur.

`qrpos.scanner.resample` fits a code's grid by its known patterns sampled at the modules'
centres, and reads each module at its centre. Below about two pixels a module, with the
lens's blur (and the sensor's pixel, which sums the light over its area), neither holds:

- **The fit drifts.** A known module's centre is also a mix of its neighbours, and next
  to a finder or a timing line the neighbours are the code's data, unknown: moving the
  grid a third of a module off the truth can make the known modules look *more*
  different from each other. Measured on the field set's tuning half, with the
  renderer's true corners as the start: `resample.fitted` moved them 0.13-0.38 of a
  module away (11 codes of 1.3-3 px a module); `matched` here 0.06-0.13.
- **A module's centre is not its value.** Blurred at half a module, a pixel on a
  module's centre takes about half its light from that module and half from the eight
  around it; a lone dark module in light ones is a light grey.

So this module models the blur as a Gaussian of `BLUR` modules (the lens, and the pixel's
own width) over the code's squares:

1. **`matched`** fits the corners by how well the image correlates, at 2 x 2 points in
   every known module (finders, separators, timing, alignment, and a ring of the quiet
   zone around the code), with those patterns *as the blur shows them* (`template`): a
   point is used only where the unknown data modules weigh almost nothing, so what it
   is compared with is known. Unbiased where `resample`'s fit is not, but no cheaper:
   it starts from `resample`'s fit, by steps of a quarter of a module and finer.
2. **`solved`** reads the modules as the least-squares answer to "which module values,
   blurred, give these pixels" (the code's pixels and a ring around it, each the
   blur-weighted sum of the 3 x 3 modules around it; a little ridge regularization
   towards the code's mean grey), by conjugate gradients on the normal equations (a
   code of version 4 is 1,521 unknowns and a few thousand pixels), for codes of at most
   `MAX_MODULE_PX` a module, at the blurs `SOLVED_BLURS`.
3. **`readings`**: what `resample` reads at the corners given, then at `matched`'s, then
   `solved`'s modules thresholded two ways at each blur: each a clean code for the
   engine, whose Reed-Solomon check decides. A wrong model gives no code, never a wrong
   one.

Cost (this machine): 10-15 ms a code read this way, 2 MB of scratch at most (under
`zoom`'s 6 MB): spent only on a code the engine found and could not decode, and on
`locate`'s find. numpy only, like the passes. The blur is not measured per code.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from qrpos.scanner import resample
from qrpos.scanner.frames import Frame
from qrpos.scanner.pixels import box_sum

_F64 = npt.NDArray[np.float64]
_F32 = npt.NDArray[np.float32]

#: the blur taken, in modules (a Gaussian's sigma). A lens and a pixel blur a code of
#: 1.3 px a module by about half a module; a phone moving smears a bigger one by more.
#: Tried on the field set's tuning half: 0.75 px, kept within 0.15-0.6 modules, read
#: fewer (6 frames 98.2 %, in a hand 98.6 %) than half a module for every code (98.4 %,
#: 98.8 %); the blur is not measured per code.
BLUR = 0.5
#: the blurs `solved` reads the modules with, in turn (a phone's smear along one way is
#: neither: the second read one more of the tuning half's codes with every pass)
SOLVED_BLURS = (BLUR, 0.25)
#: the model is for the versions tokens come in (3-4; `locate` looks for 1-7): a code of
#: a higher version, which the engine may still report, is read `resample`'s way only
#: (version 40's known patterns alone are 8 MB of scratch through the model)
MAX_VERSION = 10
#: `solved` is for small codes: above this many image pixels a module, a module's
#: centre is its value, and the pixels to solve for grow as the square
MAX_MODULE_PX = 4.0
#: the steps `matched` moves the corners by, in modules (it starts from a fitted grid)
STEPS = (0.25, 0.12, 0.06)
#: the ring of the quiet zone around the code counted as known light modules
_QUIET_RING = 2
#: points per known module, on each axis
_SUB = 2
#: a template point is used only where the unknown modules weigh at most this much
_MOST_UNKNOWN = 0.03
#: `solved`: the ring of modules around the code solved for too, at most about this many
#: pixels a module along a side (a bigger code's pixels are taken every so many), the
#: ridge towards the mean (relative to a pixel's weights, which sum to 1), CG iterations
_SOLVE_RING = 2
_PIXELS_PER_MODULE = 1.5
#: and at most about this many pixels in all (a code of a high version, which no token
#: is, costs no more than a token's: memory and time stay bounded whatever the engine
#: reports)
_MOST_PIXELS = 16_000
_RIDGE = 0.15
_ITERATIONS = 30
#: how `solved`'s module values are thresholded: against the mean of (2r+1)^2 around
_SOLVED_RADII = (3, 5)


def _erf(x: _F64) -> _F64:
    """The error function (Abramowitz and Stegun 7.1.26: within 1.5e-7)."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = (
        (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
    ) + 0.254829592
    out: _F64 = np.sign(x) * (1.0 - poly * t * np.exp(-a * a))
    return out


def cover(offset: _F64, blur: float) -> _F64:
    """How much of a unit square (a module) centred `offset` away a Gaussian of `blur`
    sees along one axis (both axes: the product of two)."""
    k = 1.0 / (max(blur, 1e-3) * np.sqrt(2.0))
    out: _F64 = 0.5 * (_erf((offset + 0.5) * k) - _erf((offset - 0.5) * k))
    return out


def module_px(corners: _F64, version: int) -> float:
    """The mean side of a module at `corners`, in image pixels."""
    c = np.asarray(corners, np.float64).reshape(4, 2)
    sides = np.linalg.norm(c - np.roll(c, 1, axis=0), axis=1)
    return float(sides.mean()) / resample.side_of(version)


def _weights(blur: float) -> _F64:
    """(sub, sub, 3, 3): how much each of the 3 x 3 modules around a point weighs, for
    each of the `_SUB` x `_SUB` points in a module (rows: y), normalized to sum 1."""
    offsets = (np.arange(_SUB) + 0.5) / _SUB - 0.5
    steps = np.array([-1.0, 0.0, 1.0])
    along = cover(offsets[:, None] - steps[None, :], blur)  # (sub, 3)
    w = along[:, None, :, None] * along[None, :, None, :]  # (sy, sx, dy, dx)
    out: _F64 = w / w.sum(axis=(2, 3), keepdims=True)
    return out


@lru_cache(maxsize=32)
def template(version: int, blur: float) -> tuple[_F64, _F64]:
    """(points (m, 2) in module coordinates, their expected darkness centred and scaled
    to unit length (m,)): the known patterns of a code of `version` as a blur of `blur`
    modules shows them, where the unknown modules weigh at most `_MOST_UNKNOWN`."""
    n = resample.side_of(version)
    ring = _QUIET_RING
    size = n + 2 * ring
    known_core, dark_core = resample.function_patterns(version)
    known = np.ones((size, size), bool)  # the quiet zone around the code is light
    known[ring : ring + n, ring : ring + n] = known_core
    dark = np.zeros((size, size), np.float64)
    dark[ring : ring + n, ring : ring + n] = dark_core & known_core
    # one more ring, unknown, so every module has its 3 x 3
    kp = np.pad(known, 1, constant_values=False)
    dp = np.pad(dark, 1)
    w = _weights(blur)
    rows, cols = np.nonzero(known)
    # far from anything dark, the quiet zone says nothing about where the code is
    near = box_sum(dark, 5) > 0
    keep_module = near[rows, cols]
    rows, cols = rows[keep_module], cols[keep_module]
    value = np.zeros((len(rows), _SUB, _SUB))
    unknown = np.zeros((len(rows), _SUB, _SUB))
    for dy in range(3):
        for dx in range(3):
            k = kp[rows + dy, cols + dx]
            d = dp[rows + dy, cols + dx]
            value += w[None, :, :, dy, dx] * (d * k)[:, None, None]
            unknown += w[None, :, :, dy, dx] * (~k)[:, None, None]
    offsets = (np.arange(_SUB) + 0.5) / _SUB
    u = (cols - ring)[:, None, None] + offsets[None, None, :] + np.zeros((1, _SUB, 1))
    v = (rows - ring)[:, None, None] + offsets[None, :, None] + np.zeros((1, 1, _SUB))
    use = unknown <= _MOST_UNKNOWN
    points = np.stack([u[use], v[use]], axis=1)
    expected = value[use] - value[use].mean()
    expected /= max(float(np.linalg.norm(expected)), 1e-9)
    points.flags.writeable = expected.flags.writeable = False
    return points, expected


def matches(image: Frame, corners: _F64, version: int, blur: float) -> _F64:
    """(k,): for each of k sets of corners (k, 4, 2), the correlation of the image with
    the blurred known patterns (0..1, either way round: dark mode is inverted)."""
    points, expected = template(version, blur)
    maps = resample.grid_maps(
        np.asarray(corners, np.float64).reshape(-1, 4, 2), resample.side_of(version)
    )
    seen = resample.sample(image, maps, points)
    seen -= seen.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(seen, axis=1) + 1e-9
    out: _F64 = np.abs(seen @ expected) / norms
    return out


def matched(image: Frame, corners: resample.Corners, version: int) -> tuple[_F64, float]:
    """The corners moved (by `STEPS` of a module, each while a move correlates better)
    to where the image best matches the code's known patterns blurred, and that match.

    Raises `numpy.linalg.LinAlgError` for corners no code can have (three in a line)."""
    start = np.array(corners, np.float64).reshape(4, 2)

    def score(sets: _F64) -> _F64:
        return matches(image, sets, version, BLUR)

    return resample.climb(score, start, module_px(start, version), STEPS)


def solved(
    image: Frame, corners: resample.Corners, version: int, blur: float = BLUR
) -> _F64 | None:
    """(n, n): the module values that, blurred, best give the code's pixels (least
    squares, ridge towards the mean grey); None when the code is not in the image.

    Raises `numpy.linalg.LinAlgError` for corners no code can have (three in a line)."""
    n = resample.side_of(version)
    c = np.asarray(corners, np.float64).reshape(4, 2)
    module = module_px(c, version)
    ring = _SOLVE_RING
    to_image = resample.grid_maps(c[None], n)[0]
    to_code = np.linalg.inv(to_image)
    h, w = image.shape
    margin = (ring + 1) * module
    x0, x1 = max(0, int(c[:, 0].min() - margin)), min(w, int(c[:, 0].max() + margin) + 1)
    y0, y1 = max(0, int(c[:, 1].min() - margin)), min(h, int(c[:, 1].max() + margin) + 1)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return None
    # a bigger code's pixels taken every so many (still more pixels than modules)
    box = (x1 - x0) * (y1 - y0)
    stride = max(1, round(module / _PIXELS_PER_MODULE), int(np.ceil(np.sqrt(box / _MOST_PIXELS))))
    ys, xs = np.mgrid[y0:y1:stride, x0:x1:stride]
    x, y = xs.ravel().astype(np.float64), ys.ravel().astype(np.float64)
    z = to_code[2, 0] * x + to_code[2, 1] * y + to_code[2, 2]
    u = (to_code[0, 0] * x + to_code[0, 1] * y + to_code[0, 2]) / z
    v = (to_code[1, 0] * x + to_code[1, 1] * y + to_code[1, 2]) / z
    inside = (u > -ring) & (u < n + ring) & (v > -ring) & (v < n + ring) & np.isfinite(z)
    if inside.sum() < n * n:
        return None
    u, v = u[inside], v[inside]
    pixels = image[ys.ravel()[inside], xs.ravel()[inside]].astype(np.float32)
    # the unknowns: the code's modules, `ring` around them, and one more ring that only
    # the outermost pixels reach (so every pixel has its 3 x 3 without a bounds check)
    size = n + 2 * ring + 2
    iu, iv = np.floor(u).astype(np.intp), np.floor(v).astype(np.intp)
    base = (iv + ring + 1) * size + (iu + ring + 1)
    steps = (-1, 0, 1)
    along_u = [cover(u - (iu + d + 0.5), blur).astype(np.float32) for d in steps]
    along_v = [cover(v - (iv + d + 0.5), blur).astype(np.float32) for d in steps]
    wts = np.stack([wy * wx for wy in along_v for wx in along_u])  # (9, pixels)
    wts /= np.maximum(wts.sum(axis=0), 1e-9)
    offsets = [dy * size + dx for dy in steps for dx in steps]
    mean = float(pixels.mean())
    target = pixels - np.float32(mean)

    def forward(x: _F32) -> _F32:
        out: _F32 = wts[0] * x[base + offsets[0]]
        for k in range(1, 9):
            out += wts[k] * x[base + offsets[k]]
        return out

    every = (base[None, :] + np.array(offsets)[:, None]).ravel()

    def back(r: _F32) -> _F32:
        out = np.bincount(every, (wts * r[None, :]).ravel(), minlength=size * size)
        return out.astype(np.float32)

    ridge = np.float32(_RIDGE * _RIDGE)
    rhs = back(target)
    x = np.zeros(size * size, np.float32)
    r = rhs.copy()
    p = r.copy()
    rr = float(r @ r)
    stop = 1e-10 * max(rr, 1e-30)
    for _ in range(_ITERATIONS):
        ap = back(forward(p)) + ridge * p
        alpha = np.float32(rr / max(float(p @ ap), 1e-30))
        x += alpha * p
        r -= alpha * ap
        rr_next = float(r @ r)
        if rr_next < stop:
            break
        p = r + np.float32(rr_next / rr) * p
        rr = rr_next
    first = ring + 1
    grid: _F64 = (x.astype(np.float64) + mean).reshape(size, size)[
        first : first + n, first : first + n
    ]
    return grid


def readings(image: Frame, corners: resample.Corners, version: int) -> Iterator[Frame]:
    """Clean codes to read for a code fitted at `corners`: `resample`'s there; then, up to
    `MAX_VERSION`, at the `matched` corners; then, for a code of at most `MAX_MODULE_PX`
    a module, the `solved` modules at each of `SOLVED_BLURS`, thresholded
    `_SOLVED_RADII` ways."""
    yield from resample.clean_codes(image, corners, version)
    if version > MAX_VERSION:
        return
    c = np.asarray(corners, np.float64).reshape(4, 2)
    try:
        with np.errstate(all="ignore"):  # corners no phone gives: nothing read, no warning
            at, _ = matched(image, c, version)
            small = module_px(at, version) <= MAX_MODULE_PX
    except np.linalg.LinAlgError:
        return
    yield from resample.clean_codes(image, at, version)
    if not small:
        return
    for blur in SOLVED_BLURS:
        try:
            with np.errstate(all="ignore"):
                grid = solved(image, at, version, blur)
        except np.linalg.LinAlgError:
            return
        if grid is None or not np.isfinite(grid).all():
            return
        for radius in _SOLVED_RADII:
            yield resample.draw(grid < resample.local_mean(grid, radius), version)


def images(image: Frame, corners: resample.Corners, version: int) -> Iterator[Frame]:
    """Clean codes to read for a code the engine found at `corners` (its own, roughly):
    the grid fitted (`resample.refine`), then `readings`."""
    if not 1 <= version <= resample.MAX_VERSION or image.ndim != 2 or min(image.shape) < 2:
        return
    if not np.isfinite(np.asarray(corners, np.float64)).all():
        return
    try:
        with np.errstate(all="ignore"):
            fitted = resample.refine(image, corners, version)
    except np.linalg.LinAlgError:  # corners in a line: not a code's
        return
    yield from readings(image, fitted, version)
