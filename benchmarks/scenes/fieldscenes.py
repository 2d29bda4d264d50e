"""The field set: phone screens as a till's camera meets them, broader than the hard set.

The hard set (`hardscenes`) is what the decoder's passes were tuned on. Outside runs found
the world harder: small, blurred and warped codes together. The field set adds what a
cracked, dim, moving phone held at a counter makes, each scene labelled with its
conditions:

- ``tiny_modules``: the code under 2 frame pixels a module (1.3-1.9), a phone held far off;
- ``motion_perspective``: a phone swung into view, tilted 25-40° and moving;
- ``rolling_shutter``: the sensor reads rows one after another while the phone moves, so
  the code is sheared (and a little motion-blurred);
- ``jpeg``: the ISP's JPEG at quality 30-60 (a USB webcam's MJPG stream is such JPEG);
- ``reflection``: the room (a window, a lamp) mirrored in the screen's glass: a soft bright
  shape over part of the code;
- ``thumb``: a thumb holding the phone, over the code's lower edge (not over a finder);
- and combinations, among them small, blurred and warped at once.

Each scene is a hard-set scene (`HardScene`, rendered by `hardscenes.render`) plus damage
the camera adds (`FieldScene.damage`), applied to the frame in the order light meets the
sensor: reflection and thumb, rolling shutter, then the JPEG.

**Two halves.** `field_set(..., half="tune")` and `half="held_back"` draw from disjoint
seeds. Only the tuning half may be looked at while changing the decoder; the held-back half
is reported, never tuned on (`benchmarks/fieldset.py` prints both).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import cv2
import numpy as np
import numpy.typing as npt

from qrpos.scanner.frames import Frame
from qrpos.scanner.synthetic import qr_matrix
from scenes.hardscenes import HardScene, clean_twin, make_scene, render

FIELD_SINGLE = (
    "tiny_modules",
    "motion_perspective",
    "rolling_shutter",
    "jpeg",
    "reflection",
    "thumb",
)
FIELD_COMBINATIONS = (
    "small_far+focus_blur+tilt",
    "tiny_modules+jpeg",
    "rolling_shutter+low_brightness",
    "reflection+cracked",
    "thumb+motion_blur",
    "motion_perspective+jpeg",
    "glare+moire+jpeg",
    "dark_mode+reflection",
)
FIELD_CONDITIONS = FIELD_SINGLE + FIELD_COMBINATIONS
#: the hard set's own conditions that a field condition builds on
_HARD_BASE = {
    "tiny_modules": "small_far",
    "motion_perspective": "tilt",
    "rolling_shutter": "motion_blur",
}
#: a phone screen's code is about this wide (mm): sets what a hand's tremor is in pixels
CODE_MM = 30.0
#: a hand holding a phone up to a camera moves it by about this much (mm, each way, one
#: standard deviation) between frames 1/30 s apart, and turns it by `HAND_DEGREES`:
#: physiological tremor (8-12 Hz, a few tenths of a millimetre at the fingertips) plus
#: drift. A model, not a measurement (hardware.md)
HAND_MM = 0.15
HAND_DEGREES = 0.1
#: the seeds of the two halves: never the same scene in both
HALF_SEEDS = {"tune": 2611, "held_back": 7717}
Half = Literal["tune", "held_back"]


@dataclass(frozen=True)
class Damage:
    """What the camera adds to a rendered hard-set scene."""

    #: rows sheared sideways by this many pixels from the code's top to its bottom
    shear_px: float = 0.0
    #: JPEG quality (0: none)
    jpeg_quality: int = 0
    #: a reflection: peak brightness added, its centre and size as fractions of the code
    reflection: float = 0.0
    reflection_at: tuple[float, float] = (0.0, 0.0)
    reflection_size: float = 0.5
    #: a thumb over the code's lower edge: how deep it reaches (fraction of the code side)
    #: and where along the edge (fraction from the code's centre, rightwards)
    thumb: float = 0.0
    thumb_at: float = 0.2


@dataclass(frozen=True)
class FieldScene:
    """One labelled scene of the field set."""

    condition: str
    base: HardScene
    damage: Damage = field(default_factory=Damage)

    @property
    def payload(self) -> bytes:
        return self.base.payload

    @property
    def labels(self) -> tuple[str, ...]:
        """The single conditions this scene combines."""
        return tuple(self.condition.split("+"))

    def at_frame(self, index: int) -> FieldScene:
        """The same phone on consecutive frame `index` (only the sensor noise differs)."""
        return replace(self, base=replace(self.base, frame_index=index))

    def in_hand(self, index: int) -> FieldScene:
        """The same phone on consecutive frame `index`, held in a hand: besides the noise,
        it has moved as a hand's tremor moves it (`HAND_MM`, `HAND_DEGREES` a frame, a
        random walk from frame 0, the same walk for the same scene)."""
        rnd = random.Random(f"hand/{self.base.seed}")
        px_per_mm = self.base.code_px / CODE_MM
        dx = dy = turn = 0.0
        for _ in range(index):
            dx += rnd.gauss(0.0, HAND_MM) * px_per_mm
            dy += rnd.gauss(0.0, HAND_MM) * px_per_mm
            turn += rnd.gauss(0.0, HAND_DEGREES)
        base = self.base
        moved = replace(
            base,
            offset=(base.offset[0] + dx / base.width, base.offset[1] + dy / base.height),
            roll=base.roll + turn,
            frame_index=index,
        )
        return replace(self, base=moved)


def make_field_scene(condition: str, index: int, *, half: Half = "held_back") -> FieldScene:
    """Scene number `index` of `condition` in `half` (deterministic in all three)."""
    if condition not in FIELD_CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}: one of {', '.join(FIELD_CONDITIONS)}")
    seed = HALF_SEEDS[half]
    rnd = random.Random(f"{seed}/{condition}/{index}")
    labels = condition.split("+")
    hard = [_HARD_BASE.get(label, label) for label in labels]
    hard = [h for h in hard if h not in ("jpeg", "reflection", "thumb")]
    base = _hard_scene("+".join(dict.fromkeys(hard)), rnd, seed)
    damage = Damage()
    height = base.height
    n = qr_matrix(base.payload).shape[0]
    if "tiny_modules" in labels:
        base = replace(base, code_px=n * rnd.uniform(1.3, 1.9), motion_px=0.0, defocus_px=0.0)
    if "motion_perspective" in labels:
        base = replace(
            base,
            motion_px=rnd.uniform(0.02, 0.035) * base.code_px,
            motion_angle=rnd.uniform(0, 180),
        )
        tilt = rnd.uniform(25, 40) * rnd.choice((-1, 1))
        base = replace(base, pitch=tilt) if rnd.random() < 0.5 else replace(base, yaw=tilt)
    if "small_far" in labels and "tilt" in labels:
        base = replace(base, code_px=height * rnd.uniform(0.15, 0.2))
    if "rolling_shutter" in labels:
        damage = replace(damage, shear_px=rnd.uniform(0.06, 0.14) * base.code_px)
        base = replace(base, motion_px=rnd.uniform(0.01, 0.02) * base.code_px)
    if "jpeg" in labels:
        damage = replace(damage, jpeg_quality=rnd.randint(30, 60))
    if "reflection" in labels:
        damage = replace(
            damage,
            reflection=rnd.uniform(50, 95),
            reflection_at=(rnd.uniform(-0.45, 0.45), rnd.uniform(-0.45, 0.45)),
            reflection_size=rnd.uniform(0.3, 0.6),
        )
    if "thumb" in labels:
        damage = replace(damage, thumb=rnd.uniform(0.08, 0.14), thumb_at=rnd.uniform(-0.05, 0.3))
    return FieldScene(condition, base, damage)


def _hard_scene(condition: str, rnd: random.Random, seed: int) -> HardScene:
    """A hard-set scene of `condition` ("" for a plain one) drawn from this half's seeds."""
    index = rnd.randrange(10**6)
    if not condition:
        plain = make_scene("finger", index, seed=seed)
        return replace(plain, condition="plain", finger=0.0)
    return make_scene(condition, index, seed=seed, combine=True)


def field_set(per_condition: int, *, half: Half = "held_back") -> list[FieldScene]:
    """`per_condition` scenes of every field condition, in condition order."""
    return [
        make_field_scene(c, i, half=half) for c in FIELD_CONDITIONS for i in range(per_condition)
    ]


def field_clean_twin(scene: FieldScene) -> FieldScene:
    """The same phone, pose and thumb, without the photometric damage (is it readable?)."""
    damage = replace(scene.damage, jpeg_quality=0, reflection=0.0, shear_px=0.0)
    return FieldScene(scene.condition, clean_twin(scene.base), damage)


def render_field(scene: FieldScene) -> Frame:
    """The greyscale frame the camera delivers for `scene`."""
    # any float dtype: OpenCV 4.10+'s stubs (Debian 13's set) type remap's result loosely
    frame: npt.NDArray[Any] = render(scene.base).astype(np.float32)
    base, damage = scene.base, scene.damage
    h, w = frame.shape
    cx = w / 2 + base.offset[0] * w
    cy = h / 2 + base.offset[1] * h
    side = base.code_px
    rng = np.random.default_rng([base.seed, 99])
    if damage.reflection > 0:
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        rx = cx + damage.reflection_at[0] * side
        ry = cy + damage.reflection_at[1] * side
        size = damage.reflection_size * side
        # a window's reflection: a bright soft-edged rectangle, brighter towards one side
        inside = np.clip(1.0 - np.maximum(abs(xx - rx), abs(yy - ry) * 0.7) / size, 0.0, 1.0)
        frame = frame + damage.reflection * np.minimum(inside * 3.0, 1.0) * (
            0.7 + 0.3 * rng.random()
        )
    if damage.thumb > 0:
        mask = np.zeros((h, w), np.uint8)
        tip_y = cy + side / 2 - damage.thumb * side
        centre = (int(cx + damage.thumb_at * side), int(tip_y + side * 0.45))
        cv2.ellipse(mask, centre, (int(side * 0.16), int(side * 0.45)), 0, 0, 360, 255, -1)
        inside = cv2.distanceTransform(mask, cv2.DIST_L2, 3)
        shade = np.minimum(inside / max(1.0, side * 0.08), 1.0)
        skin = float(rng.uniform(110, 160))
        frame = np.where(mask > 0, skin * (0.6 + 0.4 * shade), frame)
    if damage.shear_px:
        rows = (np.arange(h, dtype=np.float32) - cy) / max(side, 1.0) * damage.shear_px
        map_x = (np.arange(w, dtype=np.float32)[None, :] - rows[:, None]).astype(np.float32)
        map_y = np.repeat(np.arange(h, dtype=np.float32)[:, None], w, axis=1)
        frame = cv2.remap(frame, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    out = np.ascontiguousarray(np.clip(frame, 0, 255).astype(np.uint8))
    if damage.jpeg_quality:
        ok, data = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, damage.jpeg_quality])
        assert ok
        out = np.ascontiguousarray(cv2.imdecode(data, cv2.IMREAD_GRAYSCALE))
    return out
