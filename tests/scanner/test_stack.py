"""Frames of a phone held still, averaged (`qrpos.scanner.stack`), and the pass plan
reading the average."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qrpos.scanner import stack
from qrpos.scanner.decoders import ZxingDecoder
from qrpos.scanner.fieldscenes import FieldScene, make_field_scene, render_field
from qrpos.scanner.frames import Frame
from qrpos.scanner.hardscenes import render
from qrpos.scanner.stack import FrameStack


def _scene(condition: str = "rolling_shutter", index: int = 0) -> FieldScene:
    # the tuning half only: the held-back half is never looked at
    return make_field_scene(condition, index, half="tune")


def _noiseless(scene: FieldScene) -> npt.NDArray[np.float32]:
    return render_field(replace(scene, base=replace(scene.base, noise=0.0))).astype(np.float32)


def _rms(a: Frame, b: npt.NDArray[np.float32]) -> float:
    return float(np.sqrt(np.mean((a.astype(np.float32) - b) ** 2)))


def _big_noisy(seed: int) -> tuple[Frame, Frame]:
    """A frame larger than the camera's (a code and its surroundings), with and without
    noise: a camera frame is a crop of it, so a phone moved by whole pixels is a crop
    moved by whole pixels."""
    scene = replace(_scene("thumb", seed % 7).base, width=700, height=540)
    clean = render(replace(scene, noise=0.0))
    rng = np.random.default_rng(seed)
    noisy = np.clip(clean + rng.normal(0, 4.0, clean.shape), 0, 255).astype(np.uint8)
    return noisy, clean


def test_a_still_phone_s_frames_average_to_less_noise() -> None:
    scene = _scene()
    truth = _noiseless(scene)
    frames = FrameStack()
    single = _rms(render_field(scene), truth)
    means = [frames.add(render_field(scene.at_frame(i))) for i in range(stack.DEPTH)]
    assert len(frames) == stack.DEPTH
    assert means[0] is not None and _rms(means[0], truth) == pytest.approx(single)
    # the noise falls about as 1/sqrt(n) (rounding to grey levels keeps a floor)
    assert _rms(means[3], truth) < 0.6 * single
    assert _rms(means[-1], truth) < 0.45 * single


def test_the_mean_weighs_the_newest_frame_as_one_of_depth_once_full() -> None:
    rng = np.random.default_rng(5)

    def flat(level: float) -> Frame:
        grey: Frame = np.clip(np.rint(level + rng.normal(0, 4.0, (120, 160))), 0, 255).astype(
            np.uint8
        )
        return grey

    frames = FrameStack(depth=4)
    for _ in range(10):
        frames.add(flat(100.0))
    assert len(frames) == 4
    # a frame 3 grey levels brighter (within the noise: the same scene): a quarter of it
    assert float(frames.add(flat(103.0)).mean()) == pytest.approx(100.75, abs=0.15)
    assert len(frames) == 4


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 10_000),
    st.lists(st.tuples(st.integers(-5, 5), st.integers(-5, 5)), min_size=2, max_size=6),
)
def test_a_phone_moved_by_whole_pixels_is_aligned_and_stacked(
    seed: int, moves: list[tuple[int, int]]
) -> None:
    _, clean = _big_noisy(seed)
    rng = np.random.default_rng(seed)
    frames = FrameStack()
    y, x = 30, 30
    for dy, dx in moves:
        y, x = y + dy, x + dx
        noisy = np.clip(clean + rng.normal(0, 4.0, clean.shape), 0, 255).astype(np.uint8)
        crop = noisy[30 - (y - 30) : 30 - (y - 30) + 480, 30 - (x - 30) : 30 - (x - 30) + 640]
        out = frames.add(np.ascontiguousarray(crop))
    assert len(frames) == len(moves)
    truth = clean[30 - (y - 30) : 30 - (y - 30) + 480, 30 - (x - 30) : 30 - (x - 30) + 640]
    # aligned to the newest frame: less noise than it, not the blur of a misaligned mean
    assert _rms(out, truth.astype(np.float32)) < 0.85 * 4.0


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(-16, 16), st.integers(-16, 16))
def test_the_shift_between_two_frames_is_found_to_the_pixel(seed: int, dy: int, dx: int) -> None:
    big, _ = _big_noisy(seed)
    before = big[30:510, 30:670]
    after = big[30 - dy : 510 - dy, 30 - dx : 670 - dx]
    assert stack.shift_between(before, after) == (dy, dx)


@pytest.mark.parametrize(
    ("condition", "how"),
    [
        ("rolling_shutter", "part of a pixel"),
        ("jpeg", "part of a pixel"),
        ("tiny_modules", "part of a pixel"),
        ("rolling_shutter", "turned"),
        ("reflection", "turned"),
        ("dark_mode+reflection", "another phone"),
    ],
)
def test_a_phone_that_moves_by_less_than_a_pixel_or_turns_starts_a_new_stack(
    condition: str, how: str
) -> None:
    scene = _scene(condition)
    base = scene.base
    if how == "part of a pixel":
        moved = replace(base, offset=(base.offset[0] + 0.5 / base.width, base.offset[1]))
    elif how == "turned":
        moved = replace(base, roll=base.roll + 0.7)
    else:
        moved = _scene("thumb", 3).base
    frames = FrameStack()
    for i in range(3):
        frames.add(render_field(scene.at_frame(i)))
    assert len(frames) == 3
    new = render_field(replace(scene, base=replace(moved, frame_index=3)))
    # a mean of frames that disagree would blur the modules: the new frame alone, as it is
    assert frames.add(new) is new
    assert len(frames) == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        arrays(np.uint8, st.tuples(st.integers(1, 40), st.integers(1, 40))), min_size=1, max_size=5
    )
)
def test_any_frames_of_any_size_give_a_frame_of_the_newest_s_size(frames: list[Frame]) -> None:
    stacked = FrameStack()
    for frame in frames:
        out = stacked.add(frame)
        assert out.shape == frame.shape and out.dtype == np.uint8
        if min(frame.shape) < stack.SMALLEST:
            assert out is frame and len(stacked) == 0  # too small to tell motion: not stacked
        else:
            assert 1 <= len(stacked) <= stack.DEPTH


def test_an_empty_stack_has_no_mean_and_a_stack_holds_a_frame() -> None:
    with pytest.raises(ValueError, match="empty"):
        FrameStack().mean()
    with pytest.raises(ValueError, match="at least one"):
        FrameStack(depth=0)


@pytest.mark.parametrize(("index", "frames"), [(17, 4), (18, 2)])
def test_a_tiny_jpeg_code_no_single_frame_reads_is_read_from_the_stack(
    index: int, frames: int
) -> None:
    # from the field set's tuning half: every pass on each of six frames reads nothing
    scene = _scene("tiny_modules+jpeg", index)
    alone = ZxingDecoder(budget_ms=None)
    alone.plan.stack = None
    shots = [render_field(scene.at_frame(i)) for i in range(6)]
    assert not any(scene.payload in alone.decode(shot) for shot in shots)
    stacked = ZxingDecoder(budget_ms=None)
    read = [scene.payload in stacked.decode(shot) for shot in shots[:frames]]
    assert read == [False] * (frames - 1) + [True]


def test_the_plan_starts_a_new_stack_after_a_read_and_on_reset() -> None:
    scene = _scene("tiny_modules+jpeg", 18)
    decoder = ZxingDecoder(budget_ms=None)
    plan = decoder.plan
    assert plan.stack is not None
    decoder.decode(render_field(scene.at_frame(0)))
    assert len(plan.stack) == 1
    assert scene.payload in decoder.decode(render_field(scene.at_frame(1)))
    assert len(plan.stack) == 0  # read: the next phone is another customer's
    decoder.decode(render_field(scene.at_frame(2)))
    plan.reset()
    assert len(plan.stack) == 0
    clear = render_field(replace(scene, base=replace(scene.base, code_px=200.0)))
    assert decoder.decode(clear) and len(plan.stack) == 0  # the plain pass read it


def _counter(seed: int) -> Frame:
    """The counter under the camera, no phone over it: a smooth grain, and the noise."""
    grain = np.random.default_rng(7).normal(128, 40, (60, 80)).repeat(8, 0).repeat(8, 1)
    noise = np.random.default_rng([seed, 7]).normal(0, 3.0, grain.shape)
    return np.clip(np.rint(grain + noise), 0, 255).astype(np.uint8)


def test_a_phone_over_the_still_counter_starts_a_new_stack_and_is_said_to_have_arrived() -> None:
    for index in range(4):
        scene = _scene(("tiny_modules", "jpeg", "thumb", "dark_mode+reflection")[index], index)
        frames = FrameStack()
        for i in range(5):
            frames.add(_counter(i))
            assert not frames.arrived
        assert len(frames) == 5
        phone = render_field(scene)
        assert frames.add(phone) is phone and len(frames) == 1
        arrived: list[bool] = [frames.arrived]
        frames.add(render_field(scene.at_frame(1)))
        arrived.append(frames.arrived)
        assert len(frames) == 2 and arrived == [True, False]
        assert stack.changed(phone, _counter(9)) > 3 * stack.CHANGED


def test_a_phone_moving_in_a_hand_never_counts_as_arriving() -> None:
    for scene in (_scene("tiny_modules", 1), _scene("motion_perspective", 2), _scene()):
        frames = FrameStack()
        for i in range(8):
            frames.add(render_field(scene.in_hand(i)))
            assert not frames.arrived


def test_the_passes_start_from_the_first_when_a_phone_arrives_over_a_still_counter() -> None:
    from qrpos.scanner.passes import PASSES, PassPlan

    # one further pass a frame (a budget of 0 ms tries one), a scan that reads nothing
    plan = PassPlan(lambda frame: [], budget_ms=0.0)
    order = list(PASSES)
    for i in range(4):  # the armed loop watches the empty counter: the passes rotate
        plan.decode(_counter(i))
        assert plan.last_passes == ["plain", order[i]]
    scene = _scene("tiny_modules+jpeg", 5)
    plan.decode(render_field(scene))
    assert plan.last_passes == ["plain", order[0]]  # the first frame's best pass first
    for i in range(1, 4):  # held in a hand, the rotation goes on
        plan.decode(render_field(scene.in_hand(i)))
        assert plan.last_passes == ["plain", order[i]]


@pytest.mark.parametrize("condition", ["rolling_shutter", "jpeg", "thumb", "tiny_modules"])
def test_a_phone_creeping_by_a_tenth_of_a_pixel_a_frame_leaves_the_mean(condition: str) -> None:
    # each frame is within the threshold of the one before; the creep adds up, and the
    # mean must not hold frames further apart than the threshold allows
    scene = _scene(condition)
    base = scene.base
    frames = FrameStack()
    sizes = []
    for i in range(12):
        creep = (base.offset[0] + 0.1 * i / base.width, base.offset[1])
        frames.add(render_field(replace(scene, base=replace(base, offset=creep, frame_index=i))))
        sizes.append(len(frames))
    assert max(sizes) <= 4 and sizes.count(1) >= 3
