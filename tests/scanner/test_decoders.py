"""Each decoder reads every payload edge case and capture condition byte for byte."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyzbar import pyzbar

from qrpos.scanner import DecoderUnavailable, ZbarDecoder, make_decoder
from qrpos.scanner.decoders import DEFAULT_DECODER, Decoder
from qrpos.scanner.frames import Frame
from qrpos.scanner.synthetic import Scene

from .qrset import CONDITIONS, PAYLOADS, scene_for

SceneFrame = Callable[[Scene], Frame]


@pytest.mark.parametrize("case", sorted(PAYLOADS))
def test_decoder_returns_the_exact_bytes_of_each_payload(
    decoder: Decoder, scene_frame: SceneFrame, case: str
) -> None:
    raw = PAYLOADS[case]
    assert decoder.decode(scene_frame(scene_for([raw]))) == [raw]


@pytest.mark.parametrize("condition", sorted(CONDITIONS))
def test_decoder_reads_the_token_under_each_capture_condition(
    decoder: Decoder, scene_frame: SceneFrame, condition: str
) -> None:
    raw = PAYLOADS["symbols"]
    assert decoder.decode(scene_frame(scene_for([raw], CONDITIONS[condition]))) == [raw]


def test_decoder_returns_both_codes_of_a_frame_with_two(
    decoder: Decoder, scene_frame: SceneFrame
) -> None:
    a, b = b"vqr_first card", b"vqr_second card"
    frame = scene_frame(scene_for([a, b], Scene(qr_fraction=0.35, noise=3)))
    assert sorted(decoder.decode(frame)) == [a, b]


def test_decoder_finds_nothing_on_an_empty_counter(
    decoder: Decoder, scene_frame: SceneFrame
) -> None:
    assert decoder.decode(scene_frame(Scene(noise=6))) == []


@pytest.mark.parametrize("case", ["latin1_byte", "invalid_utf8"])
def test_zbar_binary_mode_keeps_bytes_that_plain_pyzbar_would_re_encode(
    scene_frame: SceneFrame, case: str
) -> None:
    # proves ZBAR_CFG_BINARY is really on: zbar's default guesses a charset and converts
    raw = PAYLOADS[case]
    frame = scene_frame(scene_for([raw]))
    assert [d.data for d in pyzbar.decode(frame)] != [raw]
    assert ZbarDecoder().decode(frame) == [raw]


def test_zbar_reads_inverted_codes_that_plain_pyzbar_misses(scene_frame: SceneFrame) -> None:
    raw = PAYLOADS["plain"]
    frame = scene_frame(scene_for([raw], CONDITIONS["dark_mode"]))
    assert pyzbar.decode(frame) == []
    assert ZbarDecoder().decode(frame) == [raw]


def test_zbar_full_resolution_fallback_finds_a_code_too_fine_for_half_size(
    scene_frame: SceneFrame,
) -> None:
    raw = PAYLOADS["long"]
    frame = scene_frame(scene_for([raw], Scene(qr_fraction=0.42, noise=2)))
    zbar = ZbarDecoder()
    assert zbar.scan(frame[::2, ::2].copy()) == []  # unreadable at half size
    assert zbar.decode(frame) == [raw]


def test_default_decoder_is_the_measured_one() -> None:
    assert make_decoder().name == DEFAULT_DECODER == "zxing"


def test_unknown_decoder_name_is_a_clear_error() -> None:
    with pytest.raises(DecoderUnavailable, match="choose one of zxing, zbar"):
        make_decoder("tesseract")
