"""Camera-like scenes of a phone screen showing QR codes, made with segno and OpenCV.

The virtual phone of the demo, the generated test set and the decode benchmark all draw
their frames here, so the real decoders do real work on perspective, blur, glare, noise
and dark-mode screens without a camera. Payloads are encoded as QR *byte* segments of the
exact bytes given (as a wallet app does with a UTF-8 token), never re-encoded by segno.
numpy only (no OpenCV): the demo's camera is this module, and the kiosk's camera path does
not load OpenCV's 35 MB.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
import segno
from numpy.typing import NDArray

from qrpos.scanner.frames import Frame, to_grey
from qrpos.scanner.pixels import homographies


@dataclass(frozen=True)
class Scene:
    """What the camera sees: one phone (or none) showing one or more codes."""

    payloads: Sequence[bytes] = ()
    width: int = 640
    height: int = 480
    #: side of the whole QR (quiet zone included) relative to the frame height
    qr_fraction: float = 0.45
    #: rotation of the phone in the image plane, degrees
    angle_deg: float = 0.0
    #: perspective tilt, 0 (facing the camera) .. ~0.25 (strongly tilted)
    tilt: float = 0.0
    #: Gaussian blur sigma in pixels (defocus); 0 for none
    blur: float = 0.0
    #: brightness of a specular glare spot over the screen, 0 for none
    glare: float = 0.0
    #: contrast of the screen: 1.0 full black/white, 0.3 washed out
    contrast: float = 1.0
    #: standard deviation of sensor noise, grey levels
    noise: float = 2.0
    #: dark-mode screen: light modules on a dark background
    dark_mode: bool = False
    #: offset of the phone centre from the frame centre, fraction of the frame size
    offset: tuple[float, float] = (0.0, 0.0)
    seed: int = 0


@lru_cache(maxsize=32)
def qr_matrix(payload: bytes) -> npt.NDArray[np.bool_]:
    """The QR's modules (True = dark) with a 4-module quiet zone, payload as one byte segment."""
    qr = segno.make_qr(payload, mode="byte", error="m", boost_error=False)
    return np.array(list(qr.matrix_iter(scale=1, border=4)), dtype=bool)


def _screen(payloads: Sequence[bytes], side: int, scene: Scene) -> NDArray[np.uint8]:
    """The phone's screen: the codes side by side (or stacked), black on white."""
    n = max(1, len(payloads))
    screen_h = int(side * 1.9) if n == 1 else int(side * 1.15)
    screen_w = int(side * 1.15) if n == 1 else int(side * (n + 0.3))
    # any rank: numpy 2's stubs would pin the first assignment's (tuple[int, int])
    screen: npt.NDArray[np.uint8] = np.full((screen_h, screen_w), 255, np.uint8)
    # a header bar like a wallet pass, so the screen is not just a QR
    screen[: int(screen_h * 0.12) + 1, :] = 200
    for i, payload in enumerate(payloads):
        modules = qr_matrix(payload)
        dark_light = np.where(modules, 0, 255).astype(np.uint8)
        # nearest neighbour: each output pixel takes the module under its top-left corner
        pick = np.arange(side) * dark_light.shape[0] // side
        tile = dark_light[pick][:, pick]
        x = int(side * 0.075) + i * int(side * 1.1)
        y = (screen_h - side) // 2 if n == 1 else int(side * 0.075)
        screen[y : y + side, x : x + side] = tile
    lo = 127.5 * (1.0 - scene.contrast)
    screen = np.asarray(lo + screen.astype(np.float32) * scene.contrast, dtype=np.uint8)
    if scene.dark_mode:
        screen = (255 - screen).astype(np.uint8)
    return screen


def render_scene(scene: Scene) -> NDArray[np.uint8]:
    """A BGR frame of `scene` (as a webcam would deliver it)."""
    return _render(scene, colour=True)


def _render(scene: Scene, *, colour: bool) -> npt.NDArray[Any]:
    rng = np.random.default_rng(scene.seed)
    h, w = scene.height, scene.width
    # a counter-top: smooth gradient plus texture, slightly warm in colour
    yy = np.arange(h, dtype=np.float32)[:, None]
    xx = np.arange(w, dtype=np.float32)[None, :]
    base = 90 + 50 * (xx / w) + 30 * (yy / h)
    # float32 throughout: the demo renders on the kiosk, where every frame-sized buffer counts
    speckle = rng.standard_normal((h, w), dtype=np.float32)
    speckle *= 18
    grey = gaussian_blur(speckle, 3)
    del speckle
    grey += base
    del base
    # in grey: the tint as BGR-to-grey weighs it (0.114 * 1.1 + 0.587 + 0.299 * 0.9)
    if colour:
        img: _Image = np.dstack([grey * 0.9, grey, grey * 1.1])
    else:
        img = grey
        img *= 0.9815
    if scene.payloads:
        side = max(21, int(h * scene.qr_fraction))
        screen = _screen(scene.payloads, side, scene)
        sh, sw = screen.shape
        # phone body: a dark bezel around the screen
        bezel = max(4, sw // 14)
        phone = np.full((sh + 2 * bezel, sw + 2 * bezel), 25, np.uint8)
        phone[bezel : bezel + sh, bezel : bezel + sw] = screen
        ph, pw = phone.shape
        src = np.array([[0, 0], [pw, 0], [pw, ph], [0, ph]], np.float32)
        # tilt: the far edge shrinks, as when the phone leans away from the camera
        t = scene.tilt
        corners = np.array(
            [
                [-pw / 2 * (1 - t), -ph / 2],
                [pw / 2 * (1 - t), -ph / 2],
                [pw / 2, ph / 2],
                [-pw / 2, ph / 2],
            ],
            np.float32,
        )
        a = np.deg2rad(scene.angle_deg)
        rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]], np.float32)
        centre = np.array([w / 2 + scene.offset[0] * w, h / 2 + scene.offset[1] * h], np.float32)
        dst = corners @ rot.T + centre
        m = perspective_transform(src, dst)
        warped, alpha = warp_perspective(phone.astype(np.float32), m, (w, h))
        if colour:
            warped, alpha = warped[..., None], alpha[..., None]
        # img * (1 - alpha) + round(warped) * alpha, in place (the same operations)
        img *= 1 - alpha
        np.round(warped, out=warped)
        warped *= alpha
        img += warped
        del warped, alpha
    if scene.glare > 0:
        cx = w / 2 + rng.uniform(-0.15, 0.15) * w
        cy = h / 2 + rng.uniform(-0.15, 0.15) * h
        r = h * 0.08
        # exp(-d² / 2r²) * glare * 255, added in place (the same operations, one buffer)
        spot = (xx - cx) ** 2 + (yy - cy) ** 2
        np.divide(spot, 2 * r * r, out=spot)
        np.negative(spot, out=spot)
        np.exp(spot, out=spot)
        spot *= scene.glare * 255
        img += spot[..., None] if colour else spot
        del spot
    if scene.blur > 0:
        img = gaussian_blur(img, scene.blur)
    if scene.noise > 0:
        grain = rng.standard_normal(img.shape, dtype=np.float32)
        grain *= np.float32(scene.noise)
        img += grain
        del grain
    out: npt.NDArray[np.uint8] = np.clip(img, 0, 255, out=img).astype(np.uint8)
    return out


def render_grey(scene: Scene) -> Frame:
    """The same scene as the 8-bit greyscale frame a frame source yields (rendered in grey:
    a third of the work of `render_scene`, the same picture within sensor noise)."""
    return to_grey(_render(scene, colour=False))


_Image = npt.NDArray[np.floating[Any]]
#: rows of the canvas warped at a time: each strip's index arrays cost about 60 KB a row
#: of a 640-pixel frame, so 16 rows keep the warp's scratch near 1 MB (48 cost 3 MB)
_STRIP_ROWS = 16


def gaussian_blur(image: _Image, sigma: float) -> _Image:
    """A Gaussian blur over the first two axes (OpenCV's kernel size, edges mirrored)."""
    radius = max(1, round(sigma * 4))
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    kernel = np.exp(-(x**2) / (2 * sigma * sigma))
    kernel /= kernel.sum()
    # frame-sized buffers are kept to a few (the demo renders on the kiosk): the input is
    # read, not copied, and one scratch buffer takes each tap's product
    out = image if image.dtype == np.float32 else image.astype(np.float32)
    for axis in (0, 1):
        pad = [(0, 0)] * out.ndim
        pad[axis] = (radius, radius)
        padded = np.pad(out, pad, mode="reflect")
        n = out.shape[axis]
        acc = np.zeros_like(out)
        tap = np.empty_like(out)
        for i, k in enumerate(kernel.astype(np.float32)):
            window = [slice(None)] * out.ndim
            window[axis] = slice(i, i + n)
            np.multiply(k, padded[tuple(window)], out=tap)
            acc += tap
        del padded, tap
        out = acc
    return out


def perspective_transform(
    src: npt.NDArray[np.floating[Any]], dst: npt.NDArray[np.floating[Any]]
) -> Any:
    """The 3×3 homography taking the four points `src` to `dst`."""
    return homographies(src, dst)[0]


def warp_perspective(image: _Image, m: Any, size: tuple[int, int]) -> tuple[_Image, _Image]:
    """`image` seen through homography `m` on a `size` (w, h) canvas, bilinear, and the
    share of each canvas pixel the image covers (0 outside it)."""
    w, h = size
    ih, iw = image.shape
    warped = np.zeros((h, w), np.float32)
    cover = np.zeros((h, w), np.float32)
    # only the box around the image's corners on the canvas needs work
    edge = [[-1, -1, 1], [iw + 1, -1, 1], [iw + 1, ih + 1, 1], [-1, ih + 1, 1]]
    corners = np.array(edge, np.float64) @ m.T
    xy = corners[:, :2] / corners[:, 2:]
    x_lo, y_lo = np.clip(np.floor(xy.min(axis=0)).astype(int) - 1, 0, [w, h])
    x_hi, y_hi = np.clip(np.ceil(xy.max(axis=0)).astype(int) + 2, 0, [w, h])
    if x_lo >= x_hi or y_lo >= y_hi:
        return warped, cover
    inverse = np.linalg.inv(m).astype(np.float32)
    # a one-pixel frame of zeros around the image: edges fade as OpenCV's border does
    both = np.zeros((ih + 2, iw + 2, 2), np.float32)
    both[1:-1, 1:-1, 0] = image
    both[1:-1, 1:-1, 1] = 1.0
    flat = both.reshape(-1, 2)
    xs = np.arange(x_lo, x_hi, dtype=np.float32)[None, :]
    # in strips of rows: a whole frame's worth of index arrays would cost tens of MB
    for top_row in range(y_lo, y_hi, _STRIP_ROWS):
        rows = slice(top_row, min(top_row + _STRIP_ROWS, y_hi))
        ys = np.arange(rows.start, rows.stop, dtype=np.float32)[:, None]
        warped[rows, x_lo:x_hi], cover[rows, x_lo:x_hi] = _bilinear(flat, inverse, xs, ys, iw, ih)
    return warped, cover


def _bilinear(
    flat: npt.NDArray[np.float32], inverse: Any, xs: Any, ys: Any, iw: int, ih: int
) -> tuple[_Image, _Image]:
    """Sample the padded 2-channel image `flat` at the points `inverse` maps (xs, ys) to."""
    den = inverse[2, 0] * xs + inverse[2, 1] * ys + inverse[2, 2]
    sx = (inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2]) / den
    sy = (inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2]) / den
    x0 = np.clip(np.floor(sx), -1, iw).astype(np.intp)
    y0 = np.clip(np.floor(sy), -1, ih).astype(np.intp)
    fx = np.clip(sx - x0, 0, 1)[..., None]
    fy = np.clip(sy - y0, 0, 1)[..., None]
    stride = iw + 2
    top = (y0 + 1) * stride
    bottom = np.minimum(y0 + 2, ih + 1) * stride
    left, right = x0 + 1, np.minimum(x0 + 2, iw + 1)
    a, b = flat[top + left], flat[top + right]
    c, d = flat[bottom + left], flat[bottom + right]
    upper = a + (b - a) * fx
    mixed = upper + (c + (d - c) * fx - upper) * fy
    outside = ((sx < -1) | (sy < -1) | (sx > iw) | (sy > ih))[..., None]
    mixed = np.where(outside, 0.0, mixed)
    return mixed[..., 0], mixed[..., 1]
