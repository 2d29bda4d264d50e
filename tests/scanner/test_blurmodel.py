"""Reading a small, blurred code through a model of its blur (`qrpos.scanner.blurmodel`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import partial

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qrpos.scanner import blurmodel, resample
from qrpos.scanner.decoders import ZxingDecoder
from qrpos.scanner.frames import Frame
from scenes.fieldscenes import make_field_scene, render_field

from .qrphoto import Modules, modules_of, photo
from .traced import pass_peaks, traced_peak

_F64 = npt.NDArray[np.float64]
#: the engine alone, as the decoder reads the clean codes drawn here
_ENGINE = ZxingDecoder(passes=(), resample_found=False)


def _small_code(
    seed: int, module_px: tuple[float, float] = (1.2, 1.5), blur: float = 0.7
) -> tuple[Frame, _F64, Modules, int, bytes, float]:
    """A token's code of `module_px` pixels a module, turned any way and tilted, blurred
    by `blur` pixels, with sensor noise: (frame, true corners, modules, version, payload,
    pixels a module)."""
    rng = np.random.default_rng(seed)
    payload = b"vqr_" + rng.integers(65, 90, 24).astype(np.uint8).tobytes()
    dark, version = modules_of(payload)
    module = float(rng.uniform(*module_px))
    side = dark.shape[0] * module
    square = np.array([(-1, -1), (1, -1), (1, 1), (-1, 1)], float) * side / 2
    square[:, 0] *= 1 + rng.uniform(-0.25, 0.25) * square[:, 1] / side
    turn = rng.uniform(0, 2 * np.pi)
    rotation = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
    truth = np.array([160.0, 120.0]) + square @ rotation.T
    image = photo(dark, truth, blur=blur).astype(np.float32)
    image += rng.normal(0, 3, image.shape).astype(np.float32)
    frame = np.ascontiguousarray(np.clip(image, 0, 255).astype(np.uint8))
    return frame, truth, dark, version, payload, module


def _wrong(grid: _F64, dark: Modules) -> int:
    """Modules on the wrong side of their neighbourhood's mean, the better of 2 radii."""
    return min(int(((grid < resample.local_mean(grid, r)) != dark).sum()) for r in (3, 5))


def test_the_error_function_is_within_its_published_bound() -> None:
    x = np.linspace(-6.0, 6.0, 4001, dtype=np.float64)
    exact = np.array([math.erf(v) for v in x])
    assert np.abs(blurmodel._erf(x) - exact).max() < 2e-7


@settings(max_examples=60, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(0.05, 2.0))
def test_the_modules_around_a_point_share_all_of_its_light(offset: float, blur: float) -> None:
    """However blurred, what a point sees comes from the modules, all of it: the shares
    of the modules along an axis add up to one."""
    shares = blurmodel.cover(offset - np.arange(-12.0, 13.0), blur)
    assert float(shares.sum()) == pytest.approx(1.0, abs=1e-6)
    assert (shares >= 0).all()


@pytest.mark.parametrize("version", range(1, 8))
def test_the_template_looks_at_known_modules_only(version: int) -> None:
    """Every point lies in a module every code of the version has, or in the quiet zone
    around it, and the expected values are centred and of unit length (a correlation)."""
    points, expected = blurmodel.template(version, blurmodel.BLUR)
    n = resample.side_of(version)
    known, _ = resample.function_patterns(version)
    cols, rows = np.floor(points[:, 0]).astype(int), np.floor(points[:, 1]).astype(int)
    outside = (cols < 0) | (rows < 0) | (cols >= n) | (rows >= n)
    assert (outside | known[rows.clip(0, n - 1), cols.clip(0, n - 1)]).all()
    assert (points > -blurmodel._QUIET_RING).all() and (points < n + blurmodel._QUIET_RING).all()
    assert float(expected.sum()) == pytest.approx(0.0, abs=1e-9)
    assert float(np.linalg.norm(expected)) == pytest.approx(1.0)


def test_the_blurred_template_pins_a_small_code_where_the_centres_drift() -> None:
    """From the true corners of codes of 1.2-1.5 px a module, blurred 0.7 px: `resample`'s
    centres-only fit walks off the truth (measured over 30 such draws: 0.17 of a module
    on average, up to 0.45), the blurred template's stays nearer (0.08, up to 0.25)."""
    drift_centres, drift_template = [], []
    for seed in range(12):
        frame, truth, _, version, _, module = _small_code(seed)
        centres, _ = resample.fitted(frame, truth, version)
        template, _ = blurmodel.matched(frame, truth, version)
        drift_centres.append(float(np.abs(centres - truth).max()) / module)
        drift_template.append(float(np.abs(template - truth).max()) / module)
    assert max(drift_template) < 0.35
    assert np.mean(drift_template) < 0.6 * np.mean(drift_centres)


def test_the_solved_modules_are_right_where_the_centres_are_not() -> None:
    """At the true corners of such codes, a module's centre sampled is wrong for about one
    module in twelve (81 of 1,000 on average over 30 draws), the least-squares modules for
    about one in two hundred (5)."""
    wrong_centres = wrong_solved = 0
    for seed in range(12):
        frame, truth, dark, version, _, _ = _small_code(seed)
        solved = blurmodel.solved(frame, truth, version)
        assert solved is not None
        wrong_centres += _wrong(resample.modules(frame, truth, version), dark)
        wrong_solved += _wrong(solved, dark)
    assert wrong_solved * 5 < wrong_centres


def test_small_blurred_codes_read_through_the_model_and_hardly_without() -> None:
    """From `resample`'s fit, as the decoder gets there: its own thresholds read 6 of 30
    such codes, the readings through the blur model 29 of 30 (measured). Here: 16 draws."""
    alone = model = 0
    for seed in range(16):
        frame, truth, _, version, payload, _ = _small_code(seed)
        fitted, _ = resample.fitted(frame, truth, version)
        alone += any(
            payload in _ENGINE.scan(c) for c in resample.clean_codes(frame, fitted, version)
        )
        model += any(payload in _ENGINE.scan(c) for c in blurmodel.readings(frame, fitted, version))
    assert model >= 14
    assert alone <= 8


def test_a_larger_sharp_code_is_read_as_before() -> None:
    """A code of 3-4 px a module, barely blurred: `resample`'s reading comes first and
    reads it; the model does not stand in its way."""
    for seed in range(4):
        frame, truth, _, version, payload, _ = _small_code(seed, (3.0, 4.0), blur=0.3)
        first = next(blurmodel.readings(frame, truth, version))
        assert payload in _ENGINE.scan(first)


@pytest.mark.parametrize("index", [4, 13])
def test_a_tiny_jpeg_phone_of_the_field_set_reads_through_the_model(
    index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the field set's tuning half (the held-back half is never looked at): codes
    under 2 px a module under JPEG that every pass misses on the first frame when found
    codes are read `resample`'s way only (7 of the 40 such scenes); through the model,
    the kiosk's decoder reads them."""
    scene = make_field_scene("tiny_modules+jpeg", index, half="tune")
    frame = render_field(scene)
    assert scene.payload in ZxingDecoder(budget_ms=None).decode(frame)
    monkeypatch.setattr(blurmodel, "readings", resample_only)
    assert scene.payload not in ZxingDecoder(budget_ms=None).decode(frame)


def resample_only(image: Frame, corners: resample.Corners, version: int) -> Iterator[Frame]:
    """`blurmodel.readings` as it was before the model: `resample`'s thresholds only."""
    return resample.clean_codes(image, corners, version)


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.uint8, st.tuples(st.integers(2, 60), st.integers(2, 60))),
    arrays(np.float64, (4, 2), elements=st.floats(-1e6, 1e6)),
    st.integers(1, 7),
)
def test_any_image_and_corners_give_codes_or_nothing_never_an_error(
    image: Frame, corners: _F64, version: int
) -> None:
    for code in blurmodel.images(image, corners, version):
        assert code.dtype == np.uint8 and code.ndim == 2


def test_corners_off_the_frame_solve_nothing() -> None:
    frame = np.full((100, 100), 128, np.uint8)
    far = np.array([(500.0, 500.0), (560.0, 500.0), (560.0, 560.0), (500.0, 560.0)])
    assert blurmodel.solved(frame, far, 2) is None
    with pytest.raises(np.linalg.LinAlgError):
        blurmodel.solved(frame, np.zeros((4, 2)), 2)


def test_the_model_keeps_its_memory_under_the_costliest_pass() -> None:
    """The kiosk's RSS through a sale has little to spare under 100 MB: reading a code
    through the model must stay under `zoom`'s peak (tracemalloc sees numpy's buffers),
    for the smallest code, the biggest ones it solves, and one it leaves to `resample`."""
    frame = render_field(make_field_scene("motion_perspective", 3, half="tune"))
    zoom = pass_peaks(frame, "zoom")["zoom"]
    # the highest version the model takes (no token is one), and version 40 (the engine
    # may report one), both over the frame's edge
    most = blurmodel.MAX_MODULE_PX
    for version, module in ((4, 1.3), (7, most), (blurmodel.MAX_VERSION, most), (40, most)):
        side = resample.side_of(version) * module
        corners = np.array([(100.0, 80.0), (100.0 + side, 80.0), (100.0 + side, 80.0 + side)])
        corners = np.vstack([corners, [(100.0, 80.0 + side)]])
        read = partial(_all_readings, frame, corners, version)
        read()
        _, peak = traced_peak(read)
        assert peak < zoom, f"version {version}: {peak / 1e6:.1f} MB"


def _all_readings(frame: Frame, corners: _F64, version: int) -> list[Frame]:
    return list(blurmodel.readings(frame, corners, version))
