"""Sampling a found-but-unread code's modules ourselves (`qrpos.scanner.resample`)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import segno
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qrpos.scanner import blurmodel, resample
from qrpos.scanner.decoders import ZxingDecoder, _qr_version
from qrpos.scanner.frames import Frame
from qrpos.scanner.passes import DEFAULT_PASSES
from scenes.fieldscenes import make_field_scene, render_field

from .qrphoto import modules_of as _modules
from .qrphoto import photo as _photo

#: the engine alone, as the decoder reads the clean codes `resample` draws
_ENGINE = ZxingDecoder(passes=(), resample_found=False)


def _read(image: Frame) -> list[bytes]:
    return _ENGINE.scan(image)


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=1, max_size=400), st.sampled_from("lmqh"))
def test_the_known_patterns_are_where_every_code_has_them(payload: bytes, level: str) -> None:
    """Finders, separators, timing and alignment patterns: the same in every code of a
    version, whatever it says (segno draws the codes; versions 1 to 40 come up)."""
    try:
        dark, version = _modules(payload, level)
    except segno.DataOverflowError:
        return
    known, fixed = resample.function_patterns(version)
    assert dark.shape == known.shape == (resample.side_of(version),) * 2
    assert (dark[known] == fixed[known]).all()


def test_alignment_patterns_where_the_standard_puts_them() -> None:
    # ISO/IEC 18004 Annex E, Table E.1, a few rows
    assert resample._alignment_centres(1) == []
    assert resample._alignment_centres(2) == [6, 18]
    assert resample._alignment_centres(7) == [6, 22, 38]
    assert resample._alignment_centres(32) == [6, 34, 60, 86, 112, 138]
    assert resample._alignment_centres(40) == [6, 30, 58, 86, 114, 142, 170]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(-0.3, 0.3), st.floats(2.5, 4.0))
@example(seed=70, tilt=-0.296875, module_px=2.5)
def test_refine_fits_the_grid_of_a_tilted_code_from_corners_half_a_module_off(
    seed: int, tilt: float, module_px: float
) -> None:
    """Corners off by up to half a module each way (as the engine gives them): sampled
    there, a tilted code's far modules are read wrong (200 random draws: 164 were); fitted,
    each corner is within half a module, the modules read right but for a stray one at a
    fixed threshold, and the code reads through `blurmodel.images` and the engine. (A
    sharp code's fit is not exact: any corners that put every known module's centre
    inside its module fit as well. Reading right is what counts: in 401 draws, 3 had one
    module of 400-900 on the wrong side of a fixed 125 at the smallest modules and the
    strongest tilt, and all 401 read. The test asked for every module right until a CI
    run drew seed 70, tilt -0.297, 2.5 px a module.)"""
    rng = np.random.default_rng(seed)
    payload = b"vqr_" + rng.integers(65, 90, 24).astype(np.uint8).tobytes()
    dark, version = _modules(payload)
    n = dark.shape[0]
    side = n * module_px
    square = np.array([(-1, -1), (1, -1), (1, 1), (-1, 1)], float) * side / 2
    square[:, 0] *= 1 + tilt * square[:, 1] / side  # one edge nearer than the other
    truth = np.array([160.0, 120.0]) + square
    image = _photo(dark, truth, blur=0.3 * module_px)
    start = truth + rng.uniform(-0.5, 0.5, (4, 2)) * module_px
    fitted = resample.refine(image, start, version)
    assert ((resample.modules(image, fitted, version) < 125) != dark).sum() <= 1
    assert np.abs(fitted - truth).max() < module_px / 2
    assert any(payload in _read(clean) for clean in blurmodel.images(image, start, version))


def test_a_code_the_engine_finds_but_cannot_decode_is_read_from_its_modules() -> None:
    """From the field set's tuning half (the held-back half is never looked at): a code
    under 2 pixels a module under JPEG, which no pass reads when the engine samples it."""
    scene = make_field_scene("tiny_modules+jpeg", 3, half="tune")
    frame = render_field(scene)
    # without `locate`, which reads such codes too since 2026-11-27, its own way, last
    others = tuple(name for name in DEFAULT_PASSES if name != "locate")
    before = ZxingDecoder(budget_ms=None, resample_found=False, passes=others)
    assert scene.payload not in before.decode(frame)
    assert scene.payload in ZxingDecoder(budget_ms=None).decode(frame)


@pytest.mark.parametrize(
    ("condition", "index"),
    # dark mode with a reflection had one (index 20); since `normalize` blends its cells'
    # statistics, every such scene of the tuning half reads without resampling
    [("small_far+focus_blur+tilt", 1), ("motion_perspective", 13)],
)
def test_the_field_sets_hard_codes_read_with_resampling_only(condition: str, index: int) -> None:
    """Read once the codes the engine finds are sampled again, not before. `locate` is
    left out of the "before": since it reads its finds through `blurmodel` it reads the
    tilted phone (index 13) too, its own way; it comes last, long after resampling."""
    scene = make_field_scene(condition, index, half="tune")
    frame = render_field(scene)
    others = tuple(name for name in DEFAULT_PASSES if name != "locate")
    before = ZxingDecoder(budget_ms=None, resample_found=False, passes=others)
    assert scene.payload not in before.decode(frame)
    assert scene.payload in ZxingDecoder(budget_ms=None).decode(frame)


def test_a_light_on_dark_grid_is_drawn_dark_on_light() -> None:
    dark, version = _modules(b"vqr_dark-mode-phone-0001")
    assert _read(resample.draw(~dark, version)) == [b"vqr_dark-mode-phone-0001"]
    assert _read(resample.draw(dark, version)) == [b"vqr_dark-mode-phone-0001"]


def test_the_known_patterns_are_drawn_as_the_standard_has_them() -> None:
    """A finder read wrong (a thumb over its corner) is drawn right: it carries no data."""
    dark, version = _modules(b"vqr_thumb-over-a-finder-01")
    damaged = dark.copy()
    damaged[:7, :7] = False  # the top-left finder gone
    damaged[6, 8:-8] = True  # the timing line read solid
    assert _read(resample.draw(damaged, version)) == [b"vqr_thumb-over-a-finder-01"]


def test_a_code_beyond_repair_gives_no_read_never_other_bytes() -> None:
    """The engine's error correction still has the last word: a grid with a third of its
    modules wrong reads as nothing, whatever the corners."""
    rng = np.random.default_rng(7)
    dark, version = _modules(b"vqr_" + b"x" * 30)
    n = dark.shape[0]
    truth = np.array(
        [(60, 40), (60 + 4 * n, 40), (60 + 4 * n, 40 + 4 * n), (60, 40 + 4 * n)], float
    )
    spoiled = dark ^ (rng.random(dark.shape) < 0.33)
    image = _photo(spoiled, truth)
    for clean in blurmodel.images(image, [tuple(c) for c in truth], version):
        assert _read(clean) == []


@settings(max_examples=30, deadline=None)
@given(
    arrays(np.uint8, (60, 80)),
    st.lists(st.tuples(st.floats(), st.floats()), min_size=4, max_size=4),
    st.integers(-3, 45),
)
def test_any_image_and_corners_give_images_or_nothing_never_an_error(
    image: Frame, corners: list[tuple[float, float]], version: int
) -> None:
    """Corners in a line, far outside the frame, not numbers, a version that does not
    exist: nothing, or clean images of the right size; never an exception (the scan loop
    must go on)."""
    for clean in blurmodel.images(image, corners, version):
        side = (resample.side_of(version) + 8) * 4
        assert clean.shape == (side, side) and clean.dtype == np.uint8


def test_a_frame_of_many_unreadable_codes_costs_two_resamplings_a_scan_and_reads_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hostile or merely busy frame (four codes the engine finds, each with a quarter of
    its data modules wrong) bounds the work of a scan: two codes fitted and sampled, not
    every one found, and no bytes that are not a code's."""
    rng = np.random.default_rng(5)
    tiles = []
    for i in range(4):
        dark, version = _modules(b"vqr_damaged_%d_" % i + b"x" * 20)
        known, _ = resample.function_patterns(version)
        dark ^= (rng.random(dark.shape) < 0.25) & ~known
        tiles.append(
            np.kron(np.where(np.pad(dark, 4), 0, 255).astype(np.uint8), np.ones((4, 4), np.uint8))
        )
    frame: Frame = np.ascontiguousarray(np.hstack(tiles), dtype=np.uint8)
    fitted: list[int] = []
    images = blurmodel.images

    def counted(image: Frame, corners: resample.Corners, version: int) -> Iterator[Frame]:
        fitted.append(version)
        return images(image, corners, version)

    monkeypatch.setattr(blurmodel, "images", counted)
    decoder = ZxingDecoder(passes=())
    found = decoder._results(frame, errors=True)
    assert sum(1 for r in found if not r.valid and _qr_version(r) is not None) >= 4
    assert decoder.scan(frame) == []
    assert len(fitted) == 2
