"""The hard set: labelled, deterministic, readable in principle, and read by the kiosk."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from qrpos.scanner import ScannedToken, ZxingDecoder, classify
from scenes.hardscenes import (
    COMBINATIONS,
    CONDITIONS,
    SINGLE_CONDITIONS,
    TRICKY_TOKENS,
    clean_twin,
    hard_set,
    make_scene,
    render,
)


def test_every_combination_is_made_of_labelled_single_conditions() -> None:
    assert set(CONDITIONS) == set(SINGLE_CONDITIONS) | set(COMBINATIONS)
    for condition in COMBINATIONS:
        labels = make_scene(condition, 0).labels
        assert len(labels) == 2 and set(labels) <= set(SINGLE_CONDITIONS)


def test_a_scene_renders_the_same_frame_every_time_and_later_frames_differ_in_noise_only() -> None:
    scene = make_scene("glare+moire", 3)
    assert np.array_equal(render(scene), render(make_scene("glare+moire", 3)))
    later = render(replace(scene, frame_index=1)).astype(int)
    difference = np.abs(later - render(scene).astype(int))
    assert 0 < difference.mean() < 8


def test_scenes_carry_valid_tokens_some_with_tricky_bytes() -> None:
    payloads = [s.payload for s in hard_set(8)]
    assert all(isinstance(classify(p), ScannedToken) for p in payloads)
    assert set(payloads) & set(TRICKY_TOKENS)


def test_an_unknown_condition_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown condition 'fog'"):
        make_scene("fog", 0)


@pytest.mark.parametrize("condition", CONDITIONS)
def test_each_scene_is_readable_in_principle_its_clean_twin_decodes(condition: str) -> None:
    # the same pose, finger and cracks without the photometric damage: a plain read works
    plain = ZxingDecoder(passes=())
    for index in range(2):
        scene = make_scene(condition, index)
        assert plain.decode(render(clean_twin(scene))) == [scene.payload], scene


def test_the_kiosk_decoder_reads_what_the_plain_pass_misses_and_nothing_false() -> None:
    plain = ZxingDecoder(passes=())
    kiosk = ZxingDecoder(budget_ms=None)
    conditions = ("low_brightness", "small_far", "dark_mode")
    scenes = [make_scene(c, i) for c in conditions for i in range(6)]
    plain_reads = kiosk_reads = 0
    for scene in scenes:
        frame = render(scene)
        kiosk.plan.reset()
        found = kiosk.decode(frame)
        assert set(found) <= {scene.payload}  # byte-exact or nothing
        kiosk_reads += scene.payload in found
        plain_reads += scene.payload in plain.decode(frame)
    assert kiosk_reads > plain_reads
    assert kiosk_reads >= len(scenes) - 1
