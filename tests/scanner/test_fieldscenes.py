"""The field set: deterministic, labelled, its two halves disjoint, and readable in principle."""

from __future__ import annotations

import numpy as np
import pytest

from qrpos.scanner import ZxingDecoder
from scenes.fieldscenes import (
    FIELD_CONDITIONS,
    field_clean_twin,
    field_set,
    make_field_scene,
    render_field,
)


def test_a_scene_renders_the_same_frame_every_time() -> None:
    scene = make_field_scene("tiny_modules+jpeg", 3)
    assert np.array_equal(
        render_field(scene), render_field(make_field_scene("tiny_modules+jpeg", 3))
    )
    assert render_field(scene).shape == (480, 640)


def test_the_held_back_half_shares_no_scene_with_the_tuning_half() -> None:
    tune = {s.base.seed for s in field_set(4, half="tune")}
    held = {s.base.seed for s in field_set(4, half="held_back")}
    assert not tune & held
    assert len(field_set(4)) == 4 * len(FIELD_CONDITIONS)


def test_every_scene_is_labelled_with_what_was_done_to_it() -> None:
    for condition in FIELD_CONDITIONS:
        scene = make_field_scene(condition, 0, half="tune")
        assert scene.labels == tuple(condition.split("+"))
        if "jpeg" in scene.labels:
            assert 30 <= scene.damage.jpeg_quality <= 60
        if "thumb" in scene.labels:
            assert scene.damage.thumb > 0
        if "tiny_modules" in scene.labels:
            assert scene.base.code_px / 41 < 2.0  # under 2 pixels a module at any version


def test_unknown_conditions_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown condition"):
        make_field_scene("underwater", 0)


def test_the_clean_twins_are_readable() -> None:
    """A scene no decoder could read even undamaged would not be the decoder's miss."""
    decoder = ZxingDecoder(budget_ms=None)
    scenes = field_set(2, half="tune")
    read = sum(s.payload in decoder.decode(render_field(field_clean_twin(s))) for s in scenes)
    assert read >= 0.9 * len(scenes)


def test_a_phone_in_a_hand_moves_between_frames_by_a_tremor_s_size() -> None:
    from qrpos.scanner.stack import FrameStack
    from scenes.fieldscenes import CODE_MM, HAND_DEGREES, HAND_MM

    steps: list[float] = []
    turns: list[float] = []
    stacked = 0
    for scene in field_set(2, half="tune"):
        assert scene.in_hand(0) == scene.at_frame(0)  # the first frame is where it starts
        assert scene.in_hand(4) == scene.in_hand(4)  # the same walk every time
        stack = FrameStack()
        for i in range(1, 6):
            a, b = scene.in_hand(i - 1).base, scene.in_hand(i).base
            per_mm = a.code_px / CODE_MM
            steps.append((b.offset[0] - a.offset[0]) * a.width / per_mm)
            steps.append((b.offset[1] - a.offset[1]) * a.height / per_mm)
            turns.append(b.roll - a.roll)
            assert b.frame_index == i and b.pitch == a.pitch and b.code_px == a.code_px
        for i in range(6):
            stack.add(render_field(scene.in_hand(i)))
        stacked += len(stack) == 6
    # a step is a tremor's (mm each way and degrees, one standard deviation)
    assert np.std(steps) == pytest.approx(HAND_MM, rel=0.3)
    assert np.std(turns) == pytest.approx(HAND_DEGREES, rel=0.4)
    # such frames are averaged all the same, each tile moved onto the mean by its own
    # shift (26 of the 28 scenes hold all six frames in most of their tiles)
    assert stacked >= 0.85 * len(field_set(2, half="tune"))
