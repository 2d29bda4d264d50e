"""Hard phone-screen scenes, each labelled with what makes it hard, for the decode benchmark.

`synthetic.Scene` draws a kind phone (both decoders read all of it). These scenes model
what a till camera meets: glare bands across the code, the screen's pixel grid beating
with the sensor's (moiré), motion and focus blur, the phone tilted 30–45° in 3-D, a dim
or washed-out screen, dark mode, a finger over a corner, a small far code and a cracked
screen protector, alone and combined. Geometry is a pinhole camera looking at a phone
plane; the screen is rendered at 2× and area-sampled down, as a sensor integrates light.

Every scene is deterministic (seeded) and carries a real QR (segno, one byte segment,
error level M as wallet apps use) of a realistic ``vqr_`` token, some with tricky bytes.
`clean_twin` keeps a scene's geometry and occlusions but drops the photometric damage:
the test suite checks that twin decodes, so every scene is readable in principle.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from qrpos.scanner.frames import Frame
from qrpos.scanner.synthetic import qr_matrix

#: the single conditions; `COMBINATIONS` joins some of them
SINGLE_CONDITIONS = (
    "glare",
    "moire",
    "motion_blur",
    "focus_blur",
    "tilt",
    "low_brightness",
    "dark_mode",
    "finger",
    "small_far",
    "cracked",
)
COMBINATIONS = (
    "dark_mode+tilt",
    "glare+moire",
    "small_far+motion_blur",
    "low_brightness+focus_blur",
    "finger+glare",
    "cracked+dark_mode",
)
CONDITIONS = SINGLE_CONDITIONS + COMBINATIONS

_TOKEN_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789-_"
#: valid tokens with bytes a careless pipeline changes (see tests/scanner/qrset.py)
TRICKY_TOKENS: tuple[bytes, ...] = (
    b"vqr_trail ",
    b"vqr_crlf\r\n",
    b"vqr_a+b/c=d%e~f%20==",
    "vqr_Сайн_байна_уу_ö_✓_€".encode(),
    b"vqr_tab\there\tx",
    b"vqr_[bold red]x[/]<b>",
)

#: a float image in frame levels (numpy and OpenCV hand back various float types)
_F32 = npt.NDArray[Any]


@dataclass(frozen=True)
class HardScene:
    """One labelled scene; `render` turns it into a greyscale camera frame."""

    condition: str
    payload: bytes
    seed: int
    width: int = 640
    height: int = 480
    #: side of the code (quiet zone included) in frame pixels, seen face on
    code_px: float = 200.0
    #: rotations of the phone: in the image plane, and out of it about x and y (degrees)
    roll: float = 0.0
    pitch: float = 0.0
    yaw: float = 0.0
    #: where the code's centre is, as a fraction of the frame from its centre
    offset: tuple[float, float] = (0.0, 0.0)
    #: screen levels of a light and a dark module (0..255), before dark mode swaps them
    light: float = 235.0
    dark: float = 20.0
    dark_mode: bool = False
    #: additive bright bands: (strength 0..255, half-width as a fraction of the code)
    glare: tuple[tuple[float, float], ...] = ()
    #: screen pixels per module of the code; > 0 draws the screen's pixel grid (moiré)
    grid_px_per_module: float = 0.0
    motion_px: float = 0.0
    motion_angle: float = 0.0
    #: radius of the defocus disc in frame pixels
    defocus_px: float = 0.0
    #: a finger over the code's bottom-right corner: fraction of the code it covers
    finger: float = 0.0
    #: how many crack lines run across the screen protector
    cracks: int = 0
    noise: float = 2.0
    #: which frame of the scene: consecutive frames differ in their sensor noise only
    frame_index: int = 0

    @property
    def labels(self) -> tuple[str, ...]:
        """The single conditions this scene combines."""
        return tuple(self.condition.split("+"))


def _token(rnd: random.Random) -> bytes:
    if rnd.random() < 0.25:
        return rnd.choice(TRICKY_TOKENS)
    length = rnd.choice((24, 32, 43, 48))
    return ("vqr_" + "".join(rnd.choice(_TOKEN_CHARS) for _ in range(length))).encode()


def make_scene(
    condition: str, index: int, *, seed: int = 13, width: int = 640, combine: bool = False
) -> HardScene:
    """Scene number `index` of `condition` (deterministic in all three); `combine` allows
    any "+" combination of the single conditions (the field set's)."""
    known = all(c in SINGLE_CONDITIONS for c in condition.split("+")) if combine else False
    if condition not in CONDITIONS and not known:
        raise ValueError(f"unknown condition {condition!r}: one of {', '.join(CONDITIONS)}")
    rnd = random.Random(f"{seed}/{condition}/{index}")
    height = width * 3 // 4
    labels = set(condition.split("+"))
    # a phone held at a till: 10-25 cm away, a little rotated and leaning
    scene = HardScene(
        condition=condition,
        payload=_token(rnd),
        seed=rnd.randrange(2**31),
        width=width,
        height=height,
        code_px=height * rnd.uniform(0.38, 0.6),
        roll=rnd.uniform(-30, 30),
        pitch=rnd.uniform(-12, 12),
        yaw=rnd.uniform(-12, 12),
        offset=(rnd.uniform(-0.12, 0.12), rnd.uniform(-0.1, 0.1)),
        light=rnd.uniform(200, 245),
        dark=rnd.uniform(10, 35),
        noise=rnd.uniform(2.0, 4.0),
    )
    changes: dict[str, object] = {}
    if "glare" in labels:
        bands = [(rnd.uniform(95, 145), rnd.uniform(0.08, 0.15))]
        if rnd.random() < 0.3:
            bands.append((rnd.uniform(50, 90), rnd.uniform(0.05, 0.1)))
        changes["glare"] = tuple(bands)
    if "moire" in labels:
        changes["grid_px_per_module"] = rnd.uniform(3.0, 5.0)
        changes["code_px"] = height * rnd.uniform(0.3, 0.45)
    if "motion_blur" in labels:
        changes["motion_px"] = rnd.uniform(0.032, 0.045) * scene.code_px
        changes["motion_angle"] = rnd.uniform(0, 180)
    if "focus_blur" in labels:
        changes["defocus_px"] = rnd.uniform(0.015, 0.021) * scene.code_px
    if "tilt" in labels:
        # leaning away, the phone is also a little further off
        code_px = height * rnd.uniform(0.26, 0.36)
        tilt = rnd.uniform(30, 45) * rnd.choice((-1, 1))
        # and its far half leaves the lens's depth of field: a little defocus overall
        changes.update(code_px=code_px, defocus_px=rnd.uniform(0.006, 0.009) * code_px)
        if rnd.random() < 0.5:
            changes.update(pitch=tilt, yaw=rnd.uniform(-8, 8))
        else:
            changes.update(yaw=tilt, pitch=rnd.uniform(-8, 8))
    if "low_brightness" in labels:
        dark = rnd.uniform(28, 45)
        # blurred too, a dim screen keeps a little more contrast or nobody could read it
        spread = rnd.uniform(40, 50) if len(labels) > 1 else rnd.uniform(14, 22)
        noise = rnd.uniform(2.5, 3.5) if len(labels) > 1 else rnd.uniform(3.5, 5.0)
        changes.update(dark=dark, light=dark + spread, noise=noise)
    if "dark_mode" in labels:
        # a dark-mode pass is dim too: grey modules on near-black (bright enough that
        # cracks do not outshine it: they scatter the room's light)
        dark = rnd.uniform(22, 32)
        spread = rnd.uniform(16, 26) if len(labels) == 1 else rnd.uniform(32, 46)
        if "cracked" in labels:
            spread = rnd.uniform(110, 160)
        changes.update(dark_mode=True, dark=dark, light=dark + spread, noise=rnd.uniform(3.0, 4.5))
    if "finger" in labels:
        changes["finger"] = rnd.uniform(0.3, 0.38)
    if "small_far" in labels:
        changes["code_px"] = height * rnd.uniform(0.13, 0.17)
        if "motion_blur" in labels:
            changes["motion_px"] = rnd.uniform(1.2, 2.0)
    if "cracked" in labels:
        changes["cracks"] = rnd.randint(5, 8)
    return replace(scene, **changes)  # type: ignore[arg-type]


def hard_set(per_condition: int, *, seed: int = 13, width: int = 640) -> list[HardScene]:
    """`per_condition` scenes of every condition, in condition order."""
    return [
        make_scene(c, i, seed=seed, width=width) for c in CONDITIONS for i in range(per_condition)
    ]


def clean_twin(scene: HardScene) -> HardScene:
    """The same phone, pose, finger and cracks, without the photometric damage."""
    return replace(
        scene,
        light=235.0,
        dark=20.0,
        dark_mode=False,
        glare=(),
        grid_px_per_module=0.0,
        motion_px=0.0,
        defocus_px=0.0,
        noise=0.0,
    )


# --- rendering ----------------------------------------------------------------------------

#: the sensor's supersampling: the screen is warped at this scale, then area-averaged
_SS = 2
#: focal length in frame widths (a Camera Module 3 at 640x480: about 66° across)
_FOCAL = 0.78


@lru_cache(maxsize=64)
def _modules(payload: bytes) -> npt.NDArray[np.bool_]:
    return qr_matrix(payload)


def _screen_texture(scene: HardScene, rng: np.random.Generator) -> tuple[_F32, _F32, float, float]:
    """The phone's face seen straight on: (screen 0..1 where 1 is light, what lies over it
    in frame levels or -1, texture px per module, the code's top row)."""
    modules = _modules(scene.payload)
    n = modules.shape[0]
    # texture resolution: enough that warping never magnifies it
    px = max(4, int(np.ceil(2.2 * _SS * scene.code_px / n)))
    if scene.grid_px_per_module > 0:
        # whole screen pixels per module, each drawn as (3 texture px: 2 lit, 1 gap)
        per = max(3, round(scene.grid_px_per_module))
        px = per * 3
    qr = np.kron(modules, np.ones((px, px), bool))
    side = qr.shape[0]
    margin_x, top = int(side * 0.12), int(side * 0.55)
    tex_h, tex_w = top + side + int(side * 0.45), side + 2 * margin_x
    screen = np.ones((tex_h, tex_w), np.float32)
    screen[: int(side * 0.22), :] = 0.78  # the pass's header bar
    screen[top : top + side, margin_x : margin_x + side] = np.where(qr, 0.0, 1.0)
    if scene.grid_px_per_module > 0:
        # the LCD/OLED pixel grid: one dark column and row in three, slight sub-pixel shading
        grid = np.ones((tex_h, tex_w), np.float32)
        grid[:, 2::3] *= 0.1
        grid[2::3, :] *= 0.2
        grid[:, 1::3] *= 0.85
        screen = screen * grid
    over = np.full((tex_h, tex_w), -1.0, np.float32)
    if scene.cracks:
        _draw_cracks(over, margin_x, top, side, scene.cracks, rng)
    if scene.finger > 0:
        _draw_finger(over, margin_x, top, side, scene.finger, rng)
    return screen, over, float(px), float(top)


def _draw_finger(
    over: _F32, x0: int, y0: int, side: int, cover: float, rng: np.random.Generator
) -> None:
    """A thumb from the bottom-right edge whose tip covers `cover` of the code's corner."""
    tip = (x0 + side * (1 - cover), y0 + side * (1 - cover))
    angle = float(rng.uniform(30, 60))
    length, width = side * 0.9, side * 0.2
    centre = (
        tip[0] + np.cos(np.deg2rad(angle)) * length / 2 + width * 0.55,
        tip[1] + np.sin(np.deg2rad(angle)) * length / 2 + width * 0.55,
    )
    mask = np.zeros(over.shape, np.uint8)
    cv2.ellipse(
        mask,
        (int(centre[0]), int(centre[1])),
        (int(length / 2), int(width)),
        angle,
        0,
        360,
        255,
        -1,
    )
    # skin lit by the room, shaded towards its edges
    skin = float(rng.uniform(120, 170))
    inside = cv2.distanceTransform(mask, cv2.DIST_L2, 3)
    shade = np.minimum(inside / (width * 0.6), 1.0)
    over[:] = np.where(mask > 0, skin * (0.6 + 0.4 * shade), over)


def _draw_cracks(
    over: _F32, x0: int, y0: int, side: int, count: int, rng: np.random.Generator
) -> None:
    """Crack lines radiating from an impact point, bright (they catch light) or dark."""
    impact = (x0 + side * rng.uniform(-0.1, 1.1), y0 + side * rng.uniform(-0.1, 1.1))
    thickness = max(1, side // 300)
    for _ in range(count):
        angle = rng.uniform(0, 2 * np.pi)
        points = [impact]
        x, y = impact
        for _ in range(6):
            angle += rng.normal(0, 0.25)
            step = side * rng.uniform(0.1, 0.3)
            x, y = x + np.cos(angle) * step, y + np.sin(angle) * step
            points.append((x, y))
        # a crack scatters light: mostly a bright hairline, sometimes a dark one
        level = float(rng.choice([240.0, 190.0, 70.0]))
        pts = np.array(points, np.int32).reshape(-1, 1, 2)
        cv2.polylines(over, [pts], False, level, thickness)


def _rotation(roll: float, pitch: float, yaw: float) -> _F32:
    r, p, y = np.deg2rad([roll, pitch, yaw])
    rz = np.array([[np.cos(r), -np.sin(r), 0], [np.sin(r), np.cos(r), 0], [0, 0, 1]])
    rx = np.array([[1, 0, 0], [0, np.cos(p), -np.sin(p)], [0, np.sin(p), np.cos(p)]])
    ry = np.array([[np.cos(y), 0, np.sin(y)], [0, 1, 0], [-np.sin(y), 0, np.cos(y)]])
    return np.asarray(rz @ rx @ ry, np.float32)


def _background(w: int, h: int, rng: np.random.Generator) -> _F32:
    """A counter top with a gradient and some texture, lit from one side."""
    xx = np.linspace(0, 1, w, dtype=np.float32)[None, :]
    yy = np.linspace(0, 1, h, dtype=np.float32)[:, None]
    coarse = rng.normal(0, 12, (h // 6 + 1, w // 6 + 1)).astype(np.float32)
    texture = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_LINEAR)
    return np.asarray(95 + 45 * xx + 25 * yy + texture, np.float32)


def render(scene: HardScene) -> Frame:
    """The greyscale 8-bit frame the camera delivers for `scene`."""
    rng = np.random.default_rng(scene.seed)
    w, h = scene.width * _SS, scene.height * _SS
    texture, over, px, top = _screen_texture(scene, rng)
    tex_h, tex_w = texture.shape
    qr_side = px * _modules(scene.payload).shape[0]
    # the screen in frame levels; dark mode swaps which level the code's modules take
    light, dark = scene.light, scene.dark
    screen = dark + (light - dark) * (1 - texture if scene.dark_mode else texture)
    # the finger and the cracks lie over the screen: dark mode does not invert them; a
    # crack's hairline half hides what is below it
    screen = np.where(over >= 0, np.where(over > 175, over, 0.65 * over + 0.35 * screen), screen)
    bezel = int(tex_w * 0.06)
    phone = np.full((tex_h + 2 * bezel, tex_w + 2 * bezel), 18.0, np.float32)
    phone[bezel : bezel + tex_h, bezel : bezel + tex_w] = screen
    # phone-plane coordinates in code sides, origin at the code's centre
    scale = 1.0 / qr_side
    cx_tex = bezel + (tex_w / 2)
    cy_tex = bezel + top + qr_side / 2
    ph, pw = phone.shape
    corners_tex = np.array([[0, 0], [pw, 0], [pw, ph], [0, ph]], np.float32)
    plane = (corners_tex - [cx_tex, cy_tex]) * scale
    focal = _FOCAL * w
    distance = focal / (scene.code_px * _SS)
    rot = _rotation(scene.roll, scene.pitch, scene.yaw)
    pts3 = np.c_[plane, np.zeros(4)] @ rot.T
    pts3[:, 2] += distance
    centre = np.array([w / 2 + scene.offset[0] * w, h / 2 + scene.offset[1] * h])
    projected = pts3[:, :2] * focal / pts3[:, 2:3] + centre
    m = cv2.getPerspectiveTransform(corners_tex, projected.astype(np.float32))
    warped = cv2.warpPerspective(phone, m, (w, h), flags=cv2.INTER_LINEAR, borderValue=-1.0)
    img = np.where(warped >= 0, warped, _background(w, h, rng))
    img = cv2.resize(img, (scene.width, scene.height), interpolation=cv2.INTER_AREA)
    return _camera(img, scene, rng)


def _camera(img: _F32, scene: HardScene, rng: np.random.Generator) -> Frame:
    """Light and optics on the way to the sensor, then the sensor's noise."""
    h, w = img.shape
    code_px = scene.code_px
    if scene.glare:
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        cx = w / 2 + scene.offset[0] * w + rng.uniform(-0.2, 0.2) * code_px
        cy = h / 2 + scene.offset[1] * h + rng.uniform(-0.2, 0.2) * code_px
        for strength, half_width in scene.glare:
            angle = rng.uniform(0, np.pi)
            distance = (xx - cx) * np.cos(angle) + (yy - cy) * np.sin(angle)
            img = img + strength * np.exp(-((distance / (half_width * code_px)) ** 2))
            cx += rng.uniform(-0.35, 0.35) * code_px
            cy += rng.uniform(-0.35, 0.35) * code_px
    if scene.defocus_px > 0:
        r = scene.defocus_px
        k = int(np.ceil(r)) * 2 + 1
        disc = np.zeros((k, k), np.float32)
        cv2.circle(disc, (k // 2, k // 2), round(r), 1.0, -1, cv2.LINE_AA)
        img = cv2.filter2D(img, -1, disc / disc.sum())
    if scene.motion_px > 0:
        length = scene.motion_px
        k = int(np.ceil(length)) | 1
        line = np.zeros((k, k), np.float32)
        a = np.deg2rad(scene.motion_angle)
        dx, dy = np.cos(a) * (length - 1) / 2, np.sin(a) * (length - 1) / 2
        c = k // 2
        cv2.line(
            line,
            (round(c - dx), round(c - dy)),
            (round(c + dx), round(c + dy)),
            1.0,
            1,
            cv2.LINE_AA,
        )
        img = cv2.filter2D(img, -1, line / line.sum())
    img = cv2.GaussianBlur(img, (0, 0), 0.6)  # the lens is never perfect
    img = np.minimum(img, 255.0)  # the sensor saturates before noise is added
    if scene.noise > 0:
        rng = np.random.default_rng([scene.seed, scene.frame_index])
        shot = np.sqrt(np.maximum(img, 0) / 255.0) * scene.noise * 1.5
        img = img + rng.normal(0, 1, img.shape).astype(np.float32) * (shot + scene.noise * 0.5)
    return np.ascontiguousarray(np.clip(img, 0, 255).astype(np.uint8))
