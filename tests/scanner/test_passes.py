"""The further decode passes: what each image operation does, and how the plan runs them."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qrpos.scanner import passes
from qrpos.scanner.frames import Frame
from qrpos.scanner.passes import (
    BUDGET_PER_PLAIN,
    PASS_BUDGET_CAP_MS,
    PASS_BUDGET_MS,
    PASSES,
    PassPlan,
    budget_for,
)
from qrpos.scanner.pixels import centre_box

frames = st.tuples(st.integers(4, 40), st.integers(4, 40)).flatmap(
    lambda shape: arrays(np.uint8, shape)
)


@settings(max_examples=60, deadline=None)
@given(frames)
def test_every_pass_gives_a_contiguous_8_bit_image_of_its_size(frame: Frame) -> None:
    h, w = frame.shape
    sizes = {
        "half": (h // 2, w // 2),
        "enlarge": (2 * h, 2 * w),
        "sharpen_enlarge": (2 * h, 2 * w),
        "zoom": (3 * max(1, h // 2), 3 * max(1, w // 2)),
        "sharpen_zoom": (3 * max(1, h // 2), 3 * max(1, w // 2)),
    }
    for name, transform in PASSES.items():
        out = transform(frame)
        assert out.dtype == np.uint8 and out.flags.c_contiguous, name
        if name == "locate":  # clean codes drawn side by side: a size of their own
            assert out.ndim == 2, name
            continue
        assert out.shape == sizes.get(name, (h, w)), name


@settings(max_examples=60, deadline=None)
@given(frames)
def test_half_is_the_rounded_mean_of_each_2x2_block(frame: Frame) -> None:
    h, w = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
    blocks = frame[:h, :w].reshape(h // 2, 2, w // 2, 2).astype(np.int32)
    expected = (blocks.sum(axis=(1, 3)) + 2) // 4
    assert np.array_equal(passes.half(frame), expected)


@settings(max_examples=60, deadline=None)
@given(frames)
def test_enlarge_keeps_every_original_pixel_and_stays_within_its_neighbours(frame: Frame) -> None:
    big = passes.enlarge(frame)
    assert np.array_equal(big[0::2, 0::2], frame)
    assert big.min() >= frame.min() and big.max() <= frame.max()


def test_unscratch_removes_hairlines_of_either_polarity_and_keeps_modules() -> None:
    frame = np.full((40, 40), 200, np.uint8)
    frame[10:20, 10:20] = 20  # a dark module of 10 px
    frame[:, 30] = 255  # a bright hairline
    frame[25, :] = 0  # a dark hairline
    out = passes.unscratch(frame)
    assert (out[:, 30] == 200).all()
    assert (out[25, :] == 200).all()
    assert (out[11:19, 11:19] == 20).all()


def test_flatten_evens_out_a_bright_band_across_the_frame() -> None:
    rng = np.random.default_rng(1)
    modules = rng.integers(0, 2, (60, 80)).repeat(6, 0).repeat(6, 1)
    frame = np.where(modules == 1, 30, 160).astype(np.int32)
    frame[:, 200:320] += 90  # glare: the same modules, lifted
    flat = passes.flatten(np.clip(frame, 0, 255).astype(np.uint8)).astype(np.int32)
    inside = flat[:, 232:288][modules[:, 232:288] == 0].mean()
    outside = flat[:, 40:160][modules[:, 40:160] == 0].mean()
    # light modules read about the same in and out of the band once flattened
    assert abs(inside - outside) < 0.25 * abs(frame[:, 40:160].max() - frame[:, 40:160].min())


def test_normalize_gives_a_faint_code_full_contrast_in_and_out_of_a_reflection() -> None:
    rng = np.random.default_rng(2)
    modules = rng.integers(0, 2, (60, 80)).repeat(6, 0).repeat(6, 1)
    # a dark-mode screen: light modules only 18 grey levels above the dark ones
    frame = np.where(modules == 1, 43, 25).astype(np.int32) + rng.integers(-3, 4, modules.shape)
    frame[:, 200:320] += 80  # a window reflected over part of it
    out = passes.normalize(np.clip(frame, 0, 255).astype(np.uint8)).astype(np.int32)
    # inside the modules (their edges are a blend): one threshold separates them everywhere
    inner = np.isin(np.arange(modules.shape[0]) % 6, (1, 2, 3, 4))
    core = inner[:, None] & np.isin(np.arange(modules.shape[1]) % 6, (1, 2, 3, 4))[None, :]
    for band in (slice(24, 180), slice(216, 306)):
        light = out[:, band][(modules[:, band] == 1) & core[:, band]]
        dark = out[:, band][(modules[:, band] == 0) & core[:, band]]
        assert np.percentile(light, 5) > 128 > np.percentile(dark, 95), band


def test_normalize_leaves_no_step_at_its_cells_edges_where_the_light_changes() -> None:
    # a reflection's soft rim across the frame: each 8x8 cell's mean and spread applied
    # flat to its pixels made a step at every cell's edge (1.4x the change between
    # neighbouring pixels inside a cell), which zxing-cpp took for module edges
    rng = np.random.default_rng(3)
    x = np.arange(320, dtype=np.float32)
    rim = 40 + 80 / (1 + np.exp(-(x - 160) / 6))
    frame = np.clip(np.tile(rim, (240, 1)) + rng.normal(0, 2, (240, 320)), 0, 255)
    out = passes.normalize(frame.astype(np.uint8)).astype(np.float32)
    change = np.abs(np.diff(out, axis=1))  # between columns j and j + 1
    edges = change[:, passes.NORMALIZE_CELL - 1 :: passes.NORMALIZE_CELL].mean()
    inside = np.delete(change, np.s_[passes.NORMALIZE_CELL - 1 :: passes.NORMALIZE_CELL], 1)
    assert edges < 1.1 * inside.mean()


@settings(max_examples=40, deadline=None)
@given(
    arrays(
        np.float32,
        st.tuples(st.integers(1, 12), st.integers(1, 12)),
        elements=st.floats(0, 255, width=32),
    ),
    st.integers(1, 9),
)
def test_values_between_cells_are_blended_from_the_cells_around_them(
    cells: npt.NDArray[np.float32], step: int
) -> None:
    out = passes._between_cells(cells, step)
    assert out.shape == (cells.shape[0] * step, cells.shape[1] * step)
    # every pixel lies between the values of the 3x3 cells around its own
    for i in range(cells.shape[0]):
        for j in range(cells.shape[1]):
            around = cells[max(0, i - 1) : i + 2, max(0, j - 1) : j + 2]
            block = out[i * step : (i + 1) * step, j * step : (j + 1) * step]
            assert around.min() - 1e-3 <= block.min() and block.max() <= around.max() + 1e-3
    # a cell's central pixel (an odd step has one) takes its own value
    if step % 2 == 1:
        assert np.allclose(out[step // 2 :: step, step // 2 :: step], cells, atol=1e-3)
    if np.ptp(cells) == 0:  # even cells, even pixels
        assert np.allclose(out, cells.flat[0])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 255), st.tuples(st.integers(1, 60), st.integers(1, 60)))
def test_normalize_leaves_an_even_frame_at_mid_grey(level: int, shape: tuple[int, int]) -> None:
    out = passes.normalize(np.full(shape, level, np.uint8))
    if min(shape) >= passes.NORMALIZE_CELL:
        assert (out == 128).all()
    else:  # smaller than one cell: passed through
        assert (out == level).all()


def test_normalize_reads_a_dark_mode_screen_under_a_reflection_no_other_pass_reads() -> None:
    from qrpos.scanner.decoders import ZxingDecoder
    from scenes.fieldscenes import make_field_scene, render_field

    # from the field set's tuning half (the held-back half is never looked at)
    scene = make_field_scene("dark_mode+reflection", 1, half="tune")
    frame = render_field(scene)
    others = tuple(name for name in PASSES if name != "normalize")
    assert scene.payload not in ZxingDecoder(budget_ms=None, passes=others).decode(frame)
    assert scene.payload in ZxingDecoder(budget_ms=None).decode(frame)


def test_zoom_takes_the_centre_three_times_up_and_keeps_a_flat_field_flat() -> None:
    frame = np.full((40, 60), 90, np.uint8)
    frame[10:30, 15:45] = 200  # the centre, where zoom looks
    out = passes.zoom(frame)
    assert out.shape == (60, 90)
    assert (out[20:40, 20:70] == 200).all()  # inside: flat stays flat, no ringing
    # a bigger camera frame: the same centre area, so the same cost
    assert passes.zoom(np.zeros((720, 1280), np.uint8)).shape == (720, 960)
    ramp = np.tile(np.arange(0, 240, 4, dtype=np.uint8), (40, 1))
    zoomed = passes.zoom(ramp).astype(np.int32)
    # a cubic through a straight ramp is the ramp: every new pixel between its neighbours
    steps = np.diff(zoomed[30, 6:-6])
    assert (steps >= 0).all() and (steps <= 3).all()


def test_zoom_reads_a_code_under_2_pixels_a_module_no_unzoomed_pass_reads() -> None:
    from qrpos.scanner.decoders import ZxingDecoder
    from scenes.fieldscenes import make_field_scene, render_field

    # from the field set's tuning half (the held-back half is never looked at)
    scene = make_field_scene("tiny_modules", 5, half="tune")
    frame = render_field(scene)
    # `locate` left out too: since it looks for codes under 2 px a module (2026-11-27)
    # and reads them through the blur model, it reads this one its own way, last
    others = tuple(name for name in PASSES if "zoom" not in name and name != "locate")
    assert scene.payload not in ZxingDecoder(budget_ms=None, passes=others).decode(frame)
    assert scene.payload in ZxingDecoder(budget_ms=None).decode(frame)


@pytest.mark.parametrize(
    ("condition", "index"), [("small_far+focus_blur+tilt", 6), ("tiny_modules", 39)]
)
def test_sharpen_zoom_reads_a_small_defocused_code_no_other_pass_reads(
    condition: str, index: int
) -> None:
    from qrpos.scanner.decoders import ZxingDecoder
    from scenes.fieldscenes import make_field_scene, render_field

    # from the field set's tuning half (the held-back half is never looked at)
    scene = make_field_scene(condition, index, half="tune")
    frame = render_field(scene)
    # `locate` left out too: since it looks for codes under 2 px a module (2026-11-27)
    # it reads the tiny code (index 39) its own way, last in the order
    others = tuple(name for name in PASSES if name not in ("sharpen_zoom", "locate"))
    assert scene.payload not in ZxingDecoder(budget_ms=None, passes=others).decode(frame)
    assert scene.payload in ZxingDecoder(budget_ms=None).decode(frame)
    assert (passes.sharpen_zoom(frame) == passes.zoom(passes.sharpen(frame))).all()


def test_a_frame_the_plain_pass_reads_goes_through_no_further_pass() -> None:
    found: list[str] = []

    def scan(image: Frame) -> list[bytes]:
        found.append("scan")
        return [b"vqr_x"]

    plan = PassPlan(scan, budget_ms=None)
    assert plan.decode(np.zeros((8, 8), np.uint8)) == [b"vqr_x"]
    assert plan.last_passes == ["plain"] and found == ["scan"]


def test_an_empty_frame_goes_through_every_pass_without_a_budget() -> None:
    calls: list[tuple[int, ...]] = []

    def scan(image: Frame) -> list[bytes]:
        calls.append(image.shape)
        return []

    plan = PassPlan(scan, budget_ms=None)
    assert plan.decode(np.zeros((8, 8), np.uint8)) == []
    assert plan.last_passes == ["plain", *PASSES]
    assert len(calls) == 1 + len(PASSES)


def test_the_plain_pass_is_the_cheap_read_and_the_further_passes_use_further() -> None:
    """The plain pass's time sizes the run-time budget, so it must stay the one cheap read:
    a costlier reading of a code found but not decoded belongs to the further passes."""
    calls: list[str] = []

    def plain(image: Frame) -> list[bytes]:
        calls.append("plain")
        return []

    def further(image: Frame) -> list[bytes]:
        calls.append("further")
        return [b"vqr_found_again"] if len(calls) == 3 else []

    plan = PassPlan(plain, ("half", "smooth", "sharpen"), budget_ms=None, further=further)
    assert plan.decode(np.zeros((8, 8), np.uint8)) == [b"vqr_found_again"]
    assert calls == ["plain", "further", "further"]
    assert plan.last_passes == ["plain", "half", "smooth"]


def test_the_kiosks_plain_pass_does_not_resample_its_further_passes_do() -> None:
    from qrpos.scanner.decoders import ZxingDecoder
    from scenes.fieldscenes import make_field_scene, render_field

    # tuning half: a code zxing finds in the zoomed centre but cannot decode
    scene = make_field_scene("tiny_modules+jpeg", 3, half="tune")
    zoomed = passes.zoom(render_field(scene))
    decoder = ZxingDecoder(budget_ms=None)
    assert decoder.read(zoomed) == []
    assert decoder.scan(zoomed) == [scene.payload]


def test_the_budget_stops_a_frame_and_the_next_frame_carries_on_with_the_next_pass() -> None:
    now = [0.0]

    def scan(image: Frame) -> list[bytes]:
        now[0] += 0.004  # every scan costs 4 ms
        return []

    plan = PassPlan(scan, ("half", "sharpen", "smooth"), budget_ms=10.0, clock=lambda: now[0])
    frame = np.zeros((8, 8), np.uint8)
    plan.decode(frame)
    assert plan.last_passes == ["plain", "half", "sharpen"]  # 12 ms: over the budget
    plan.decode(frame)
    assert plan.last_passes == ["plain", "smooth", "half"]
    plan.reset()
    plan.decode(frame)
    assert plan.last_passes == ["plain", "half", "sharpen"]


def test_at_least_one_further_pass_runs_however_slow_the_plain_one() -> None:
    now = [0.0]

    def scan(image: Frame) -> list[bytes]:
        now[0] += 1.0
        return [b"vqr_late"] if image.shape == (4, 4) else []

    plan = PassPlan(scan, ("half", "smooth"), budget_ms=5.0, clock=lambda: now[0])
    assert plan.decode(np.zeros((8, 8), np.uint8)) == [b"vqr_late"]
    assert plan.last_passes == ["plain", "half"]


def test_an_unknown_pass_is_refused_with_the_known_ones_named() -> None:
    with pytest.raises(ValueError, match=r"unknown decode pass.*'half'"):
        PassPlan(lambda image: [], ("half", "blur_more"))


@pytest.mark.parametrize("slower", [1.0, 2.0, 4.0])
def test_the_run_time_budget_gives_a_slower_core_the_same_passes(slower: float) -> None:
    """ "auto" sizes the budget from the measured plain pass: a core 2x or 4x slower (every
    scan costs more on its clock) tries as many further passes per empty frame as this
    one, where a fixed 12 ms budget cuts them."""
    now = [0.0]

    def scan(image: Frame) -> list[bytes]:
        now[0] += 0.0012 * slower  # a plain pass (and every further one) of 1.2 ms
        return []

    frame = np.zeros((8, 8), np.uint8)
    auto = PassPlan(scan, budget_ms="auto", clock=lambda: now[0])
    fixed = PassPlan(scan, budget_ms=12.0, clock=lambda: now[0])
    for _ in range(40):  # a second of empty frames: the median settles
        auto.decode(frame)
        fixed.decode(frame)
    assert auto.frame_budget_ms == pytest.approx(budget_for(0.0012 * slower * 1000))
    per_frame = len(auto.last_passes) - 1
    # the frame's scans go on until they have spent 12 plain passes' time, at any speed,
    # until the 50 ms ceiling binds (at 4x a scan is 4.8 ms: 11 scans reach 50 ms, so the
    # last two passes go to the next frame)
    scans = math.ceil(min(PASS_BUDGET_CAP_MS, BUDGET_PER_PLAIN * 1.2 * slower) / (1.2 * slower))
    assert per_frame == min(len(PASSES), scans - 1)
    assert per_frame >= len(PASSES) - 2
    if slower > 1:
        assert len(fixed.last_passes) - 1 < per_frame


def test_the_run_time_budget_stays_between_its_floor_and_its_ceiling() -> None:
    assert budget_for(0.1) == PASS_BUDGET_MS  # a fast core keeps the budget measured here
    assert budget_for(0.94) == PASS_BUDGET_MS  # this machine's plain pass
    assert budget_for(3.0) == pytest.approx(BUDGET_PER_PLAIN * 3.0)
    assert budget_for(30.0) == PASS_BUDGET_CAP_MS  # never more than 1.5 frame intervals


@settings(max_examples=60, deadline=None)
@given(arrays(np.uint8, st.tuples(st.integers(1, 90), st.integers(1, 90))))
def test_sharpen_zoom_sharpens_only_the_centre_and_gives_zoom_of_sharpen_bit_for_bit(
    frame: Frame,
) -> None:
    assert np.array_equal(passes.sharpen_zoom(frame), passes.zoom(passes.sharpen(frame)))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 2000),
    st.integers(1, 2000),
    st.integers(1, 600),
    st.integers(1, 600),
    st.floats(0.01, 1.0),
)
def test_the_centre_box_is_centred_inside_the_frame_and_as_big_as_asked(
    h: int, w: int, most_h: int, most_w: int, share: float
) -> None:
    """`zoom`, `sharpen_zoom` and `deblur` take their part of the frame from it."""
    top, left, ch, cw = centre_box((h, w), (most_h, most_w), share)
    assert (ch, cw) == (max(1, min(int(h * share), most_h)), max(1, min(int(w * share), most_w)))
    assert top >= 0 and top + ch <= h and left >= 0 and left + cw <= w
    # centred: the margins differ by a pixel at most
    assert abs((h - top - ch) - top) <= 1 and abs((w - left - cw) - left) <= 1
