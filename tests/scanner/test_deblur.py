"""Motion blur measured and undone (`qrpos.scanner.deblur`), on real QR images."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qrpos.scanner import ZxingDecoder
from qrpos.scanner.deblur import DEBLUR_MAX, deblur, motion
from qrpos.scanner.frames import Frame
from qrpos.scanner.passes import PASSES, smooth
from scenes.fieldscenes import make_field_scene, render_field
from scenes.hardscenes import make_scene, render

from .traced import pass_peaks


def _swung(length: float, degrees: float, index: int = 0) -> tuple[Frame, Frame]:
    """A phone face on, still and then moving `length` px towards `degrees` while the
    sensor integrates (the same noise): (sharp frame, smeared frame)."""
    scene = make_scene("motion_blur", index)
    scene = replace(scene, roll=10.0 * index, pitch=0.0, yaw=0.0)
    sharp = render(replace(scene, motion_px=0.0))
    return sharp, render(replace(scene, motion_px=length, motion_angle=degrees))


def _drawn(length: float, degrees: float) -> tuple[float, float]:
    """The smear `hardscenes` draws for `motion_px=length` (an anti-aliased line between
    whole pixels of a k x k kernel): its length (end pixels included) and direction."""
    a = np.deg2rad(degrees)
    dx, dy = np.cos(a) * (length - 1) / 2, np.sin(a) * (length - 1) / 2
    c = (int(np.ceil(length)) | 1) // 2
    run_x, run_y = round(c + dx) - round(c - dx), round(c + dy) - round(c - dy)
    return float(np.hypot(run_x, run_y)) + 1.0, float(np.degrees(np.arctan2(run_y, run_x)))


def _angle_apart(a: float, b: float) -> float:
    """Degrees between two undirected lines."""
    return abs((a - b + 90.0) % 180.0 - 90.0)


@settings(max_examples=25, deadline=None)
@given(st.floats(7.0, 12.0), st.floats(0.0, 180.0), st.integers(0, 5))
def test_motion_finds_a_long_smears_length_and_direction(
    length: float, degrees: float, index: int
) -> None:
    _, smeared = _swung(length, degrees, index)
    found, theta = motion(smeared)
    drawn, direction = _drawn(length, degrees)
    # 1020 draws on this grid (lengths 7-12, every 11 degrees, six codes): length off by
    # -1.75..+2.25 px (the anti-aliasing and the lens blur lengthen a smear), the
    # direction by 15.4 degrees at worst (a short smear along the code's own edges)
    assert abs(found - drawn) <= 2.5
    assert _angle_apart(float(np.degrees(theta)), direction) <= 18.0


@settings(max_examples=15, deadline=None)
@given(st.floats(7.0, 12.0), st.floats(0.0, 180.0), st.integers(0, 5))
def test_deblur_brings_a_smeared_code_closer_to_the_sharp_one(
    length: float, degrees: float, index: int
) -> None:
    """Closer to the sharp frame as `deblur` would give it back unsmeared (it smooths
    the deconvolved noise with a 3x3 box): on a grid of 594 draws (lengths 7-12, every
    17 degrees, six codes) the error fell to 0.58 of the smeared frame's (median), 0.91
    at worst. A smear under 7 px is measured too long at times, and deblurring it can do
    harm: the pass is one more image to read, never the only one."""
    sharp, smeared = _swung(length, degrees, index)
    left = (sharp.shape[1] - DEBLUR_MAX[1]) // 2
    columns = slice(left, left + DEBLUR_MAX[1])
    reference = smooth(sharp)[:, columns].astype(np.float64)
    before = smeared[:, columns].astype(np.float64)
    after = deblur(smeared).astype(np.float64)
    inner = (slice(40, -40), slice(40, -40))  # the FFT's wrap-around rings at the edges

    def error(image: npt.NDArray[np.float64]) -> float:
        return float(np.sqrt(np.mean((image[inner] - reference[inner]) ** 2)))

    assert error(after) < 0.95 * error(before)


@pytest.mark.parametrize("index", [9, 16, 32])
def test_deblur_reads_a_swung_phone_no_other_pass_reads(index: int) -> None:
    """Tuning-half scenes of a phone with a thumb on it, swung: neither the plain scan
    nor any other pass (each with its resampling) reads the frame; deblurred, it reads.
    `locate`, which came after, reads 9 and 16 as well (it finds the code by its texture
    and fits the grid): the order tries `deblur`, ten times cheaper, long before it."""
    scene = make_field_scene("thumb+motion_blur", index, half="tune")
    frame = render_field(scene)
    engine = ZxingDecoder(passes=())
    assert scene.payload not in engine.scan(frame)
    for name, transform in PASSES.items():
        if name not in ("deblur", "locate"):
            assert scene.payload not in engine.scan(transform(frame)), name
    assert engine.scan(PASSES["deblur"](frame)) == [scene.payload]


def test_a_kiosk_decoder_reaches_the_deblur_pass_on_a_swung_phone() -> None:
    scene = make_field_scene("thumb+motion_blur", 16, half="tune")
    kiosk = ZxingDecoder(budget_ms=None)
    assert kiosk.decode(render_field(scene)) == [scene.payload]
    assert kiosk.plan.last_passes[-1] == "deblur"


@settings(max_examples=80, deadline=None)
@given(
    st.tuples(st.integers(1, 40), st.integers(1, 40)).flatmap(lambda shape: arrays(np.uint8, shape))
)
def test_any_small_frame_is_deblurred_without_error(frame: Frame) -> None:
    out = deblur(frame)
    assert out.dtype == np.uint8 and out.flags.c_contiguous
    assert out.shape == frame.shape
    length, theta = motion(frame)
    assert np.isfinite(length) and 0.0 <= theta < np.pi


@pytest.mark.parametrize("shape", [(720, 1280), (480, 640), (600, 500), (300, 900)])
def test_a_big_frame_is_deblurred_in_its_centre(shape: tuple[int, int]) -> None:
    frame = np.full(shape, 128, np.uint8)
    out = deblur(frame)
    assert out.shape == (min(shape[0], DEBLUR_MAX[0]), min(shape[1], DEBLUR_MAX[1]))
    # a flat frame stays flat (the filter keeps the mean: no smear to undo, no ringing)
    assert int(out.min()) >= 127 and int(out.max()) <= 128


def test_deblur_keeps_its_memory_under_the_costliest_other_pass() -> None:
    """The kiosk's RSS through a sale has a couple of MB to spare under 100 MB: the pass
    must not be the one that spends them. A whole-array FFT peaked at 11.8 MB here on a
    640x480 frame (numpy's complex128 temporaries), `zoom` at 6.2 MB; banded, the pass
    peaks at about 3.9 MB. tracemalloc sees numpy's buffers."""
    frame = render_field(make_field_scene("thumb+motion_blur", 3, half="tune"))
    peaks = pass_peaks(frame, "deblur", "zoom")
    assert peaks["deblur"] < 5e6, f"deblur peaked at {peaks['deblur'] / 1e6:.1f} MB"
    assert peaks["deblur"] < peaks["zoom"]
