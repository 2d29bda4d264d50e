"""Frames of a phone held still, averaged (`qrpos.scanner.stack`), and the pass plan
reading the average."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qrpos.scanner import motion, stack
from qrpos.scanner.decoders import ZxingDecoder
from qrpos.scanner.frames import Frame
from qrpos.scanner.passes import DEFAULT_PASSES
from qrpos.scanner.pixels import halved
from qrpos.scanner.stack import FrameStack
from scenes.fieldscenes import FieldScene, make_field_scene, render_field
from scenes.hardscenes import render

from .traced import traced_peak


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


def _stacked_noise(seed: int, moves: list[tuple[int, int]]) -> float:
    """A phone moved by whole pixels between frames (`moves`), each frame a crop of one
    scene with fresh noise: how far the stack's last mean lies from the clean scene (the
    rms, grey levels; σ of a frame's noise 4.0), at the best of the places it may lie."""
    _, clean = _big_noisy(seed)
    rng = np.random.default_rng(seed)
    frames = FrameStack()
    y, x = 30, 30
    seen = []
    for dy, dx in moves:
        y, x = y + dy, x + dx
        noisy = np.clip(clean + rng.normal(0, 4.0, clean.shape), 0, 255).astype(np.uint8)
        out = frames.add(np.ascontiguousarray(noisy[60 - y : 540 - y, 60 - x : 700 - x]))
        seen.append((y, x))
    assert len(frames) == len(moves)
    # the mean lies where the first frame did, or where the phone went, to the pixel its
    # coarse shift was rounded to: less noise than a frame there, not the blur of a
    # misaligned mean (the edges, where a moved mean has nothing, left out)
    places = {(y + a, x + b) for y, x in seen for a in (-1, 0, 1) for b in (-1, 0, 1)}
    inside = (slice(16, -16), slice(16, -16))
    return min(
        _rms(out[inside], clean[60 - y : 540 - y, 60 - x : 700 - x][inside].astype(np.float32))
        for y, x in places
        if 0 <= y <= 60 and 0 <= x <= 60
    )


_EVEN = st.integers(-2, 2).map(lambda v: 2 * v)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.tuples(_EVEN, _EVEN), min_size=2, max_size=6))
def test_a_phone_moved_by_even_whole_pixels_is_aligned_and_stacked(
    seed: int, moves: list[tuple[int, int]]
) -> None:
    """Moves of an even number of pixels: whole pixels of the halved frames the tiles'
    agreement is judged on (odd ones: the next test). Worst of 300 random draws:
    3.31, the bound 3.4 (`python benchmarks/stack_moves.py --even`, 2026-11-28)."""
    assert _stacked_noise(seed, moves) < 0.85 * 4.0


@pytest.mark.xfail(
    strict=True,
    reason="known limitation (issue 49 note): a move by an odd number of pixels is half a "
    "pixel of the halved frames, whose bilinear blur of the code's sharp edges reads as "
    "change, so the code's tiles are not averaged (and a border tile that settled on a "
    "wrong shift restarts misplaced); judged on the full frames instead, the tiny-JPEG "
    "hand-held scene of the tuning half is no longer read at its second frame",
)
def test_a_phone_moved_by_odd_whole_pixels_is_aligned_and_stacked() -> None:
    """Found by the property above when its moves were any whole pixels (a Debian 13 root's
    suite; then `python benchmarks/stack_moves.py`: rare, two searches each met one within
    their first few hundred draws (this one, 3.47, and seed 297, 3.58), `--seed 21` none
    in 300)."""
    assert _stacked_noise(5393, [(5, -4), (-3, -3)]) < 0.85 * 4.0


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(-16, 16), st.integers(-16, 16))
def test_the_whole_frame_s_shift_is_found_by_phase_correlation(seed: int, dy: int, dx: int) -> None:
    big, _ = _big_noisy(seed)
    before = big[30:510, 30:670]
    after = big[30 - dy : 510 - dy, 30 - dx : 670 - dx]
    # on the halved frames, to the pixel of the frame
    py, px = motion._offset(halved(before), halved(after))
    assert (round(2 * py), round(2 * px)) == (dy, dx)
    # on the quartered ones, the coarse start the tiles refine: within a pixel (0.73 at
    # worst in 300 draws here), well inside the tiles' reach
    qy, qx = motion._offset(halved(halved(before)), halved(halved(after)))
    assert abs(4 * qy - dy) <= 1.0 and abs(4 * qx - dx) <= 1.0


@pytest.mark.parametrize(
    ("condition", "how"),
    [
        ("rolling_shutter", "part of a pixel"),
        ("jpeg", "part of a pixel"),
        ("tiny_modules", "part of a pixel"),
        ("tiny_modules+jpeg", "part of a pixel"),
        ("rolling_shutter", "turned"),
        ("reflection", "turned"),
    ],
)
def test_a_phone_that_moves_by_part_of_a_pixel_or_turns_is_followed_tile_by_tile(
    condition: str, how: str
) -> None:
    # a hand moves a phone by a part of a pixel and turns it by a tenth of a degree a
    # frame (`FieldScene.in_hand`): each tile of the new frame is moved onto the mean
    scene = _scene(condition)
    base = scene.base
    if how == "part of a pixel":
        moved = replace(base, offset=(base.offset[0] + 0.5 / base.width, base.offset[1]))
    else:
        moved = replace(base, roll=base.roll + 0.3)
    truth = _noiseless(scene)
    frames = FrameStack()
    for i in range(3):
        three = frames.add(render_field(scene.at_frame(i)))
    assert len(frames) == 3
    four = frames.add(render_field(replace(scene, base=replace(moved, frame_index=3))))
    assert len(frames) == 4
    held = _tiles_holding(frames, 4)
    assert held.mean() >= 0.9  # a tile the move does not fit starts again (none here, or few)
    # closer to the phone as the first frames showed it than before: the moved frame
    # lowered the noise and did not blur the modules
    assert _rms(four[held], truth[held]) < _rms(three[held], truth[held])


def _tiles_holding(frames: FrameStack, count: int) -> npt.NDArray[np.bool_]:
    """The pixels of the frame whose tile's mean holds `count` frames."""
    held = np.asarray(frames.tile_counts() == count)
    side = motion.TILE
    h, w = frames.mean().shape
    full: npt.NDArray[np.bool_] = np.repeat(np.repeat(held, side, 0), side, 1)[:h, :w]
    return full


def test_another_phone_starts_a_new_stack() -> None:
    scene, other = _scene("dark_mode+reflection"), _scene("thumb", 3)
    frames = FrameStack()
    for i in range(3):
        frames.add(render_field(scene.at_frame(i)))
    new = render_field(other)
    # most of the frame shows another scene: a new mean, of the new frame alone
    assert frames.add(new) is new and len(frames) == 1


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


#: from the field set's tuning half, a phone no single frame reads with every pass, read
#: from the stack on its 4th frame. (Tiny codes under JPEG were these scenes until the
#: blur model, `qrpos.scanner.blurmodel`, read them from single frames: of the tuning
#: half's 40 such codes, none is left that only the stack reads.)
_STACK_ONLY = ("dark_mode+reflection", 37, 4)


def test_a_phone_no_single_frame_reads_is_read_from_the_stack() -> None:
    condition, index, frames = _STACK_ONLY
    scene = _scene(condition, index)
    alone = ZxingDecoder(budget_ms=None)
    alone.plan.stack = None
    shots = [render_field(scene.at_frame(i)) for i in range(6)]
    assert not any(scene.payload in alone.decode(shot) for shot in shots)
    stacked = ZxingDecoder(budget_ms=None)
    read = [scene.payload in stacked.decode(shot) for shot in shots[:frames]]
    assert read == [False] * (frames - 1) + [True]


def test_the_plan_starts_a_new_stack_after_a_read_and_on_reset() -> None:
    condition, index, frames = _STACK_ONLY
    scene = _scene(condition, index)
    decoder = ZxingDecoder(budget_ms=None)
    plan = decoder.plan
    assert plan.stack is not None
    for i in range(frames - 1):
        decoder.decode(render_field(scene.at_frame(i)))
        assert len(plan.stack) == i + 1
    assert scene.payload in decoder.decode(render_field(scene.at_frame(frames - 1)))
    assert len(plan.stack) == 0  # read: the next phone is another customer's
    decoder.decode(render_field(scene.at_frame(frames)))
    plan.reset()
    assert len(plan.stack) == 0
    other = _scene("tiny_modules+jpeg", 18)  # a big phone, plainly read
    clear = render_field(replace(other, base=replace(other.base, code_px=200.0)))
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
        assert motion.changed(phone, _counter(9)) > 3 * motion.CHANGED


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
def test_a_phone_creeping_by_a_tenth_of_a_pixel_a_frame_is_followed_and_stays_sharp(
    condition: str,
) -> None:
    # the creep adds up frame after frame: each frame is moved onto the first, so the
    # mean stays as sharp as the first frame's phone while its noise falls
    scene = _scene(condition)
    base = scene.base
    truth = _noiseless(scene)
    frames = FrameStack()
    sizes = []
    for i in range(12):
        creep = (base.offset[0] + 0.1 * i / base.width, base.offset[1])
        out = frames.add(
            render_field(replace(scene, base=replace(base, offset=creep, frame_index=i)))
        )
        sizes.append(len(frames))
    assert sizes == [min(i + 1, stack.DEPTH) for i in range(12)]
    # a tile over the phone's edge sees two motions and starts again; the others hold
    # `DEPTH` frames, less noisy than one (JPEG's blocks are the same in every frame, so
    # they stay: 0.82 of a frame's error at quality 33, 0.33-0.5 without JPEG)
    held = _tiles_holding(frames, stack.DEPTH)
    assert held.mean() >= 0.85
    single = render_field(scene)
    assert _rms(out[held], truth[held]) < 0.9 * _rms(single[held], truth[held])


@pytest.mark.parametrize(("index", "frames"), [(17, 2), (38, 4)])
def test_a_tiny_jpeg_code_in_a_hand_no_single_frame_reads_is_read_from_the_stack(
    index: int, frames: int
) -> None:
    # from the field set's tuning half: every pass on each of six hand-held frames reads
    # nothing, and the stack before tiles (one shift for the whole frame) read nothing
    # either: the phone moves over the counter, and only its own tiles follow it. (Every
    # pass but `locate`: since it looks for codes under 2 px a module, 2026-11-27, it reads
    # some of these frames alone; the stack's worth is measured without it.)
    scene = _scene("tiny_modules+jpeg", index)
    shots = [render_field(scene.in_hand(i)) for i in range(6)]
    others = tuple(name for name in DEFAULT_PASSES if name != "locate")
    alone = ZxingDecoder(budget_ms=None, passes=others)
    alone.plan.stack = None
    assert not any(scene.payload in alone.decode(shot) for shot in shots)
    stacked = ZxingDecoder(budget_ms=None, passes=others)
    read = [scene.payload in stacked.decode(shot) for shot in shots[:frames]]
    assert read == [False] * (frames - 1) + [True]


def _texture(seed: int, shape: tuple[int, int] = (192, 256)) -> npt.NDArray[np.float32]:
    """A smooth random texture (a blurred noise field, grey levels about 128 ± 40)."""
    noise = np.random.default_rng(seed).normal(128.0, 90.0, shape).astype(np.float32)
    blurred = np.asarray(cv2.GaussianBlur(noise, (0, 0), 2.0), np.float32)  # as it is: no copy
    return blurred


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(-2.5, 2.5), st.floats(-2.5, 2.5))
def test_each_tile_s_shift_is_found_to_a_tenth_of_a_pixel(seed: int, dy: float, dx: float) -> None:
    before = _texture(seed)
    h, w = before.shape
    # `after` shows at (y + dy, x + dx) what `before` showed at (y, x)
    move = np.array([[1.0, 0.0, dx], [0.0, 1.0, dy]], np.float32)
    # float32 in, float32 out (no copy): said for OpenCV 4.10+'s looser stubs
    after = np.asarray(
        cv2.warpAffine(before, move, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT),
        np.float32,
    )
    rng = np.random.default_rng(seed + 1)
    after = (after + rng.normal(0, 1.0, after.shape)).astype(np.float32)
    found_y, found_x, agree = motion.tile_shifts(before, after, 32, motion._expected(after))
    inner = (slice(1, -1), slice(1, -1))  # the border tiles see what the warp made up
    assert np.abs(found_y[inner] - dy).max() < 0.1
    assert np.abs(found_x[inner] - dx).max() < 0.1
    assert agree[inner].all()
    # and moved back by what was found, each tile shows `before` again
    back = motion.tile_warp(after, found_y, found_x, 32)
    assert float(np.abs(back - before)[32:-32, 32:-32].mean()) < 1.5


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 5), st.data())
def test_moving_tiles_by_whole_pixels_cuts_each_from_its_place(
    seed: int, down: int, across: int, data: st.DataObject
) -> None:
    side = 16
    image = _texture(seed, (down * side, across * side))
    shifts = st.integers(-7, 7)
    dy = np.array(data.draw(st.lists(shifts, min_size=down * across, max_size=down * across)))
    dx = np.array(data.draw(st.lists(shifts, min_size=down * across, max_size=down * across)))
    dy, dx = (
        dy.reshape(down, across).astype(np.float32),
        dx.reshape(down, across).astype(np.float32),
    )
    out = motion.tile_warp(image, dy, dx, side)
    edged = np.pad(image, 8, mode="edge")
    for i in range(down):
        for j in range(across):
            y, x = i * side + int(dy[i, j]) + 8, j * side + int(dx[i, j]) + 8
            tile = out[i * side : (i + 1) * side, j * side : (j + 1) * side]
            assert np.array_equal(tile, edged[y : y + side, x : x + side])


def test_the_stack_s_scratch_memory_stays_under_the_costliest_pass_s() -> None:
    """The kiosk's RSS through a sale has a couple of MB to spare under 100 MB, and the
    stack's scratch is freed before the passes run: its peak must stay under `zoom`'s
    (6.2 MB on a 640x480 frame; a hand-held frame moved tile by tile peaks at about
    5.7 MB). tracemalloc sees numpy's buffers."""
    from qrpos.scanner.passes import PASSES

    scene = _scene("thumb", 3)
    frames = [render_field(scene.in_hand(i)) for i in range(4)]
    held = FrameStack()
    for frame in frames[:2]:
        held.add(frame)  # numpy's first-use caches are not the stack's
    PASSES["zoom"](frames[0])
    peaks = [traced_peak(partial(held.add, frame))[1] for frame in frames[2:]]
    assert len(held) == 4  # moved tile by tile, not refused
    zoom = traced_peak(lambda: PASSES["zoom"](frames[0]))[1]
    assert max(peaks) < zoom, f"the stack peaked at {max(peaks) / 1e6:.1f} MB"


def test_a_bigger_camera_frame_is_stacked_in_its_centre_at_a_640x480_frame_s_cost() -> None:
    scene = _scene("thumb", 3)
    big = replace(scene, base=replace(scene.base, width=1280, height=720))
    frames = [render_field(big.in_hand(i)) for i in range(4)]
    held = FrameStack()
    for frame in frames[:3]:
        out = held.add(frame)
    out, peak = traced_peak(lambda: held.add(frames[3]))
    assert out.shape == frames[3].shape and len(held) == 4
    top, left = (720 - 480) // 2, (1280 - 640) // 2
    outside = np.ones(out.shape, bool)
    outside[top : top + 480, left : left + 640] = False
    assert np.array_equal(out[outside], frames[3][outside])  # the rest as the frame shows it
    assert not np.array_equal(out[~outside], frames[3][~outside])  # the centre, the mean
    assert peak < 8e6, f"peaked at {peak / 1e6:.1f} MB"  # 5.7 MB of scratch, and the copy


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10_000),
    st.tuples(st.integers(16, 150), st.integers(16, 150)),
    st.lists(st.tuples(st.floats(-20, 20), st.floats(-20, 20)), min_size=2, max_size=6),
    st.booleans(),
)
def test_any_frame_size_and_any_motion_are_stacked_without_fault(
    seed: int, shape: tuple[int, int], moves: list[tuple[float, float]], flat: bool
) -> None:
    # a textured (or flat) scene moved by any amount, whole or part of a pixel, on a
    # frame of any size from the smallest stacked: the tile path runs, and each mean has
    # the frame's size and lies within the frames' grey levels
    h, w = shape
    base = np.full((h + 48, w + 48), 90, np.float32) if flat else _texture(seed, (h + 48, w + 48))
    rng = np.random.default_rng(seed)
    frames = FrameStack()
    for dy, dx in moves:
        move = np.array([[1.0, 0.0, dx], [0.0, 1.0, dy]], np.float32)
        moved = cv2.warpAffine(base, move, (w + 48, h + 48), borderMode=cv2.BORDER_REFLECT)
        noisy = moved[24 : 24 + h, 24 : 24 + w] + rng.normal(0, 2.0, (h, w))
        frame = np.clip(noisy, 0, 255).astype(np.uint8)
        out = frames.add(frame)
        assert out.shape == frame.shape and out.dtype == np.uint8
        assert 1 <= len(frames) <= stack.DEPTH
        counts = frames.tile_counts()
        assert counts.shape == (-(-h // motion.TILE), -(-w // motion.TILE))
        assert counts.min() >= 1 and counts.max() <= stack.DEPTH
