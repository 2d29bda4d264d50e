"""Camera-like scenes of a phone screen showing QR codes, made with segno and OpenCV.

The virtual phone of the demo, the generated test set and the decode benchmark all draw
their frames here, so the real decoders do real work on perspective, blur, glare, noise
and dark-mode screens without a camera. Payloads are encoded as QR *byte* segments of the
exact bytes given (as a wallet app does with a UTF-8 token), never re-encoded by segno.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
import segno
from numpy.typing import NDArray

from qrpos.scanner.frames import Frame, to_grey


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


def qr_matrix(payload: bytes) -> NDArray[np.bool_]:
    """The QR's modules (True = dark) with a 4-module quiet zone, payload as one byte segment."""
    qr = segno.make_qr(payload, mode="byte", error="m", boost_error=False)
    return np.array(list(qr.matrix_iter(scale=1, border=4)), dtype=bool)


def _screen(payloads: Sequence[bytes], side: int, scene: Scene) -> NDArray[np.uint8]:
    """The phone's screen: the codes side by side (or stacked), black on white."""
    n = max(1, len(payloads))
    screen_h = int(side * 1.9) if n == 1 else int(side * 1.15)
    screen_w = int(side * 1.15) if n == 1 else int(side * (n + 0.3))
    screen = np.full((screen_h, screen_w), 255, np.uint8)
    # a header bar like a wallet pass, so the screen is not just a QR
    cv2.rectangle(screen, (0, 0), (screen_w, int(screen_h * 0.12)), 200, thickness=-1)
    for i, payload in enumerate(payloads):
        modules = qr_matrix(payload)
        dark_light = np.where(modules, 0, 255).astype(np.uint8)
        tile = cv2.resize(dark_light, (side, side), interpolation=cv2.INTER_NEAREST)
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
    rng = np.random.default_rng(scene.seed)
    h, w = scene.height, scene.width
    # a counter-top: smooth gradient plus texture, in colour
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = 90 + 50 * (xx / w) + 30 * (yy / h)
    texture = cv2.GaussianBlur(rng.normal(0, 18, (h, w)).astype(np.float32), (0, 0), 3)
    grey = base + texture
    img = np.dstack([grey * 0.9, grey, grey * 1.1])
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
        m = cv2.getPerspectiveTransform(src, dst.astype(np.float32))
        warped = cv2.warpPerspective(phone, m, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)
        mask = cv2.warpPerspective(np.full((ph, pw), 255, np.uint8), m, (w, h), borderValue=0)
        alpha = (mask.astype(np.float32) / 255.0)[..., None]
        img = img * (1 - alpha) + warped.astype(np.float32)[..., None] * alpha
    if scene.glare > 0:
        cx = w / 2 + rng.uniform(-0.15, 0.15) * w
        cy = h / 2 + rng.uniform(-0.15, 0.15) * h
        r = h * 0.08
        spot = np.exp(-(((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r)))
        img = img + (scene.glare * 255 * spot)[..., None]
    if scene.blur > 0:
        img = cv2.GaussianBlur(img, (0, 0), scene.blur)
    if scene.noise > 0:
        img = img + rng.normal(0, scene.noise, img.shape)
    out: NDArray[np.uint8] = np.clip(img, 0, 255).astype(np.uint8)
    return out


def render_grey(scene: Scene) -> Frame:
    """The same scene as the 8-bit greyscale frame a frame source yields."""
    return to_grey(render_scene(scene))
