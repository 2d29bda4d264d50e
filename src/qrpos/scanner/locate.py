"""Finding a code the engine does not find: by its texture, then by its known patterns.

zxing-cpp, like every QR reader, finds a code by its finders: across each of three
corners a run of dark, light, three dark, light, dark (1:1:3:1:1). A phone moving while
it is tilted away smears every finder along the motion by a module or more, JPEG adds
its blocks, and the runs are gone: the engine finds no code, so there is not even a code
for `qrpos.scanner.resample` to sample again. Yet the code is still the plainest thing
in the frame, a patch of edges running both ways. This pass finds it by that:

1. **Where** (`region`): the frame at half size; around each pixel, the mean change
   across (5x5) and the mean change down; the smaller of the two, so a phone's edge, a
   header bar or a straight shadow (a change one way only) counts for little. The
   connected patch around the strongest point, above a threshold between the frame's
   median and that peak, is the code.
2. **Its outline** (`outline`): the quadrilateral of largest area on the patch's convex
   hull; a code seen in perspective is a quadrilateral, and the hull ignores the gaps
   between its modules.
3. **Which way round, and how big** (`candidates`): each of the four corners as the
   code's top-left and each version the tokens come in, scored by how well the known
   patterns (finders, timing, alignment) show through those corners; the best few moved
   a module at a time, then finer, to where they fit best (`resample.fitted`).
4. **Read** (`locate`): the best fits' modules, thresholded the ways `resample` does,
   drawn as clean codes side by side in one image for the engine, which does the format,
   the error correction and the bytes. A wrong corner, turn or version gives a grid that
   fails the Reed-Solomon check: no code, never a wrong one.

numpy only, like the other passes.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt

from qrpos.scanner import blurmodel, resample
from qrpos.scanner.frames import Frame
from qrpos.scanner.pixels import box_sum, centre_box, halved

_F32 = npt.NDArray[np.float32]
_F64 = npt.NDArray[np.float64]
_Bool = npt.NDArray[np.bool_]

#: pixels (of the half-size frame) each side of the window the change is averaged over:
#: a few modules of a code at 1.5-3 half-size pixels a module. With `THRESHOLD`, chosen
#: on synthetic codes (3-5 px a module, turned, tilted; 148 of 150 read, 7 and 0.45:
#: 140) and the tuning half's moving, tilted phones (39 of 66 frames read; 7: 36-40)
WINDOW = 5
#: at most this much of a frame's centre is looked at (a 640x480 frame whole): on a camera
#: set to 1280x720 the pass costs what it costs at 640x480
LOCATE_MAX = (480, 640)
#: where between the frame's median texture and its peak the code's patch is cut (0.15:
#: the patch spills into the phone's bezel; 0.6: it loses the corners of light modules)
THRESHOLD = 0.3
#: the patch is first followed on cells of this many pixels a side (cheap), then cut out
#: at the pixel inside them
_CELL = 4
#: a patch smaller than this many half-size pixels is no code (a 21-module code at 1.3
#: pixels a module covers about 190)
_MIN_PIXELS = 60
#: hull vertices kept for the quadrilateral search (the search is cubic in them)
_HULL_VERTICES = 32
#: the QR versions tried: a wallet token of 28-52 bytes is version 3 or 4 at level M;
#: 1-7 leave room for shorter and longer ones (up to 122 bytes at level M)
VERSIONS = tuple(range(1, 8))
#: modules smaller than this (pixels) are not looked for. At 2 px (until 2026-11-27) codes
#: of 1.3-1.9 px were left to the other passes: `resample`'s fit had no slope to follow
#: there. Read through the blur model (`blurmodel`), 11 of 20 synthetic codes of 1.4-1.9
#: px a module are read by the pass at 1.2 px, 2 at 2 px; tuning half within 6 frames
#: still 98.6 -> 98.8 % (codes under 2 px under JPEG, the mean of a still phone's frames)
MIN_MODULE_PX = 1.2
#: corner orders and versions scored at the outline, kept for the coarse fit; and kept
#: after it for the fine fit and the read
_COARSE_KEEP = 2
_FINE_KEEP = 1
#: the steps of the coarse fit (modules): the outline is off by up to two modules where
#: the motion smeared the code's edge; then `resample.REFINE_STEPS` below half a module
COARSE_STEPS = (1.0, 0.5)
FINE_STEPS = tuple(s for s in resample.REFINE_STEPS if s < 0.5)
#: the outline itself and its moves by a module, as `resample.refine` moves corners
_NEAR = np.concatenate([np.zeros((1, 4, 2)), resample.MOVES])


def texture(frame: Frame) -> _F32:
    """At half size (a frame under 64 px a side: full size), the smaller of the mean
    change across and the mean change down over `WINDOW` x `WINDOW` pixels."""
    g = halved(frame) if min(frame.shape) >= 64 else frame.astype(np.float32)
    across = np.zeros_like(g)
    down = np.zeros_like(g)
    np.abs(g[:, 1:] - g[:, :-1], out=across[:, 1:])
    np.abs(g[1:] - g[:-1], out=down[1:])
    out: _F32 = np.minimum(box_sum(across, WINDOW), box_sum(down, WINDOW))
    return out


def region(t: _F32) -> _Bool:
    """The connected patch of `t` around its peak, above `THRESHOLD` of the way from the
    median to the peak (all False when `t` is flat)."""
    h, w = t.shape
    peak = np.unravel_index(int(np.argmax(t)), t.shape)
    top = float(t[peak])
    base = float(np.median(t[::2, ::2]))
    if top <= base + 1e-3:
        return np.zeros((h, w), bool)
    mask = t > base + THRESHOLD * (top - base)
    # follow the patch on cells (8-connected): any pixel of a cell above the threshold
    ch, cw = -(-h // _CELL), -(-w // _CELL)
    padded = np.zeros((ch * _CELL, cw * _CELL), bool)
    padded[:h, :w] = mask
    cells = padded.reshape(ch, _CELL, cw, _CELL).any(axis=(1, 3))
    reached = np.zeros_like(cells)
    reached[peak[0] // _CELL, peak[1] // _CELL] = True
    for _ in range(ch + cw):
        p = np.pad(reached, 1)
        rows = p[:-2] | p[1:-1] | p[2:]
        grown = (rows[:, :-2] | rows[:, 1:-1] | rows[:, 2:]) & cells
        if (grown == reached).all():
            break
        reached = grown
    inside = np.repeat(np.repeat(reached, _CELL, axis=0), _CELL, axis=1)[:h, :w]
    out: _Bool = mask & inside
    return out


def _hull(points: _F64) -> _F64:
    """The convex hull of `points` (m, 2), its vertices in order (monotone chain)."""
    pts = np.unique(points, axis=0)  # sorted by x, then y
    if len(pts) < 3:
        return pts

    def half_hull(ordered: _F64) -> list[tuple[float, float]]:
        chain: list[tuple[float, float]] = []
        # (m, 2) rows; numpy 2's stubs type tolist() as any nesting
        rows = cast("list[list[float]]", ordered.tolist())
        for x, y in rows:
            while len(chain) >= 2:
                (ox, oy), (ax, ay) = chain[-2], chain[-1]
                if (ax - ox) * (y - oy) - (ay - oy) * (x - ox) > 0:
                    break
                chain.pop()
            chain.append((x, y))
        return chain

    lower, upper = half_hull(pts), half_hull(pts[::-1])
    return np.array(lower[:-1] + upper[:-1], np.float64)


def _fewer(hull: _F64, most: int) -> _F64:
    """`hull` with its least salient vertices dropped (each time the one whose triangle
    with its neighbours is smallest) until `most` are left."""
    h = hull
    while len(h) > most:
        before, after = np.roll(h, 1, axis=0), np.roll(h, -1, axis=0)
        area = np.abs(
            (h[:, 0] - before[:, 0]) * (after[:, 1] - before[:, 1])
            - (h[:, 1] - before[:, 1]) * (after[:, 0] - before[:, 0])
        )
        h = np.delete(h, int(np.argmin(area)), axis=0)
    return h


def _largest_quad(hull: _F64) -> _F64 | None:
    """The four vertices of `hull` (in its order) enclosing the largest area."""
    m = len(hull)
    if m < 4:
        return None
    x, y = hull[:, 0], hull[:, 1]
    # area[i, k, j] of the triangle (i, j, k)
    dx = x[None, :] - x[:, None]
    dy = y[None, :] - y[:, None]
    area = np.abs(dx[:, None, :] * dy[:, :, None] - dy[:, None, :] * dx[:, :, None]) / 2
    steps = (np.arange(m)[None, :] - np.arange(m)[:, None]) % m  # [i, j]: j - i around
    between = (steps[:, None, :] > 0) & (steps[:, None, :] < steps[:, :, None])
    area = np.where(between, area, -1.0)
    best = area.max(axis=2)  # [i, k]: the best third vertex between i and k
    pick = area.argmax(axis=2)
    total = np.where((best >= 0) & (best.T >= 0), best + best.T, -1.0)
    i, k = (int(v) for v in np.unravel_index(int(np.argmax(total)), total.shape))
    if total[i, k] <= 0:
        return None
    return hull[[i, int(pick[i, k]), k, int(pick[k, i])]]


def outline(frame: Frame) -> _F64 | None:
    """The four corners (4, 2) of the code's patch in `frame`'s pixels, clockwise on
    screen from any of them; None when there is no patch a code could be."""
    t = texture(frame)
    patch = region(t)
    rows = np.nonzero(patch.any(axis=1))[0]
    if patch.sum() < _MIN_PIXELS or len(rows) < 4:
        return None
    lines = patch[rows]
    left = lines.argmax(axis=1).astype(np.float64)
    right = (lines.shape[1] - lines[:, ::-1].argmax(axis=1)).astype(np.float64)
    r = rows.astype(np.float64)
    # each row's run as the corners of its pixels: (left, r), (right, r), and r + 1
    runs = [np.stack([x, y], 1) for x in (left, right) for y in (r, r + 1)]
    points = np.concatenate(runs)
    quad = _largest_quad(_fewer(_hull(points), _HULL_VERTICES))
    if quad is None:
        return None
    quad = quad * (2.0 if t.shape != frame.shape else 1.0)
    centre = quad.mean(axis=0)
    order = np.argsort(np.arctan2(quad[:, 1] - centre[1], quad[:, 0] - centre[0]))
    out: _F64 = quad[order]  # by angle with y down: clockwise on screen
    return out


def candidates(frame: Frame, quad: _F64) -> list[tuple[float, int, _F64]]:
    """(fit, version, corners), best first: the codes the outline `quad` could be,
    fitted to the frame."""
    turns = np.array([np.roll(quad, -r, axis=0) for r in range(4)])
    scored: list[tuple[float, int, _F64]] = []
    with np.errstate(all="ignore"):
        for version in VERSIONS:
            # each turn, and each turn moved by a module each way `resample` moves a
            # code: the outline is off by a module or two, where a fit is no guide yet
            module = float(np.linalg.norm(quad[1] - quad[0])) / resample.side_of(version)
            if module < MIN_MODULE_PX:
                break  # a higher version has smaller modules still
            moved = turns[:, None] + _NEAR[None] * module  # (4, moves, 4, 2)
            try:
                fits = resample.fits(frame, moved.reshape(-1, 4, 2), version)
            except np.linalg.LinAlgError:  # three corners in a line: no code
                return []
            fits = fits.reshape(len(turns), -1)
            best = fits.argmax(axis=1)
            scored += [
                (float(fits[t, b]), version, moved[t, b]) for t, b in enumerate(best.tolist())
            ]
        scored.sort(key=lambda c: -c[0])
        coarse: list[tuple[float, int, _F64]] = []
        for _, version, corners in scored[:_COARSE_KEEP]:
            try:
                moved, fit = resample.fitted(frame, corners, version, COARSE_STEPS)
            except np.linalg.LinAlgError:
                continue
            coarse.append((fit, version, moved))
        coarse.sort(key=lambda c: -c[0])
        fine: list[tuple[float, int, _F64]] = []
        for _, version, corners in coarse[:_FINE_KEEP]:
            try:
                moved, fit = resample.fitted(frame, corners, version, FINE_STEPS)
            except np.linalg.LinAlgError:
                continue
            fine.append((fit, version, moved))
    fine.sort(key=lambda c: -c[0])
    return fine


def locate(frame: Frame) -> Frame:
    """The pass: the codes the frame's most textured patch could be, drawn clean side by
    side (a blank image when there is no such patch)."""
    blank = np.full((8, 8), 255, np.uint8)
    if frame.ndim != 2 or min(frame.shape) < 16:
        return blank
    top, left, height, width = centre_box(frame.shape, LOCATE_MAX)
    frame = frame[top : top + height, left : left + width]
    quad = outline(frame)
    if quad is None:
        return blank
    codes = [
        code
        for _, version, corners in candidates(frame, quad)
        for code in blurmodel.readings(frame, corners, version)
    ]
    if not codes:
        return blank
    side = max(c.shape[0] for c in codes)
    row = np.full((side, side * len(codes)), 255, np.uint8)
    for i, code in enumerate(codes):
        row[: code.shape[0], i * side : i * side + code.shape[1]] = code
    return row
