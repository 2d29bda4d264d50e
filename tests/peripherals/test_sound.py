"""The till's tones: three that differ audibly (measured from the generated audio), played
through a real `aplay` and a buzzer on gpiozero's own mock pins, and a missing or broken
device that never raises and never blocks the sale."""

from __future__ import annotations

import io
import shutil
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from gpiozero import Device
from gpiozero.pins.mock import MockFactory, MockPWMPin

from qrpos.peripherals.sound import (
    RATE,
    TONE_NAMES,
    TONES,
    AlsaOutput,
    GpioOutput,
    Sounds,
    SoundSettingError,
    render,
    sounds_from_settings,
    wav_bytes,
)
from qrpos.present.outcome import ToneName


def notes(samples: npt.NDArray[np.int16], rate: int = RATE) -> list[tuple[float, float]]:
    """(dominant frequency in Hz, seconds) of each sounding stretch of `samples`: what a
    listener hears, found from the audio alone (not from the tone table)."""
    loud = np.abs(samples.astype(np.float64)) > 0.02 * 32767
    found, start, quiet = [], None, 0
    gap = int(0.01 * rate)  # a rest is at least 10 ms of silence (zero-crossings are not)
    for i, on in enumerate(np.append(loud, [False] * (gap + 1))):
        if on:
            start, quiet = (i if start is None else start), 0
        elif start is not None:
            quiet += 1
            if quiet > gap:
                part = samples[start : i - quiet + 1].astype(np.float64)
                spectrum = np.abs(np.fft.rfft(part * np.hanning(len(part)), n=1 << 16))
                peak = float(np.fft.rfftfreq(1 << 16, 1 / rate)[int(np.argmax(spectrum))])
                found.append((peak, len(part) / rate))
                start = None
    return found


def wav_samples(data: bytes) -> tuple[npt.NDArray[np.int16], int]:
    with wave.open(io.BytesIO(data)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth()) == (1, 2)
        frames = wav.readframes(wav.getnframes())
        return np.frombuffer(frames, dtype="<i2"), wav.getframerate()


def test_the_three_tones_differ_in_pitch_and_in_rhythm() -> None:
    heard = {name: notes(*wav_samples(wav_bytes(render(name)))) for name in TONE_NAMES}
    pitches = {name: [round(f) for f, _ in heard[name]] for name in TONE_NAMES}
    # each note's pitch, measured from the audio within 1 % of what the table asks
    for name in TONE_NAMES:
        wanted = [f for f, _ in TONES[name] if f > 0]
        assert len(pitches[name]) == len(wanted), (name, heard[name])
        for got, want in zip(pitches[name], wanted, strict=True):
            assert abs(got - want) < 0.01 * want, (name, got, want)
    assert pitches["approved"][1] > pitches["approved"][0]  # rising: "done"
    assert max(pitches["declined"]) < 500 < min(pitches["attention"])  # low "no"
    # apart by rhythm too (a one-pitch active buzzer): 2, 1 and 3 notes
    assert sorted(len(heard[n]) for n in TONE_NAMES) == [1, 2, 3]
    # and by pitch: no note of one tone within a semitone of the other tones' notes
    for a in TONE_NAMES:
        for b in TONE_NAMES:
            if a < b:
                for fa in pitches[a]:
                    assert all(abs(12 * np.log2(fa / fb)) > 1 for fb in pitches[b]), (a, b)


def test_every_tone_is_short_and_within_a_speakers_range() -> None:
    for name in TONE_NAMES:
        samples = render(name)
        assert 0.2 < len(samples) / RATE < 0.7
        assert int(np.abs(samples.astype(np.int32)).max()) < 32767
        assert all(300 < f < 4000 for f, _ in TONES[name] if f)


def test_volume_scales_and_zero_is_silent() -> None:
    loud = int(np.abs(render("approved", 1.0).astype(np.int32)).max())
    soft = int(np.abs(render("approved", 0.25).astype(np.int32)).max())
    assert abs(soft / loud - 0.25) < 0.02
    assert not np.any(render("approved", 0.0))
    assert sounds_from_settings({"volume": 0}).play("approved", bell=pytest.fail) == "off"


needs_aplay = pytest.mark.skipif(shutil.which("aplay") is None, reason="alsa-utils missing")


@needs_aplay
@pytest.mark.parametrize("tone", TONE_NAMES)
def test_a_tone_plays_through_the_real_aplay(tone: ToneName) -> None:
    """ALSA's null device takes the stream as a sound card would (no card on CI)."""
    alsa = AlsaOutput(device="null")
    assert Sounds([alsa]).play(tone, bell=pytest.fail) == "alsa"
    assert alsa.wait() == 0
    assert alsa.trouble is None


@needs_aplay
def test_a_missing_sound_card_is_noted_once_and_never_raises() -> None:
    heard: list[str] = []
    alsa = AlsaOutput(device="hw:CARD=NoSuchCard", on_trouble=heard.append)
    started = time.monotonic()
    for _ in range(3):
        Sounds([alsa]).play("declined")
        alsa.wait()
    assert time.monotonic() - started < 5
    assert alsa.trouble is not None and len(heard) == 1, heard


def test_no_aplay_at_all_falls_back_to_the_bell(tmp_path: Path) -> None:
    alsa = AlsaOutput(aplay=None)
    alsa._aplay = None  # as on a machine without alsa-utils
    rung: list[int] = []
    assert Sounds([alsa]).play("approved", bell=lambda: rung.append(1)) == "bell"
    assert rung == [1]
    gone = AlsaOutput(aplay=str(tmp_path / "aplay-removed-after-start"))
    assert Sounds([gone]).play("approved", bell=lambda: rung.append(2)) == "bell"
    assert rung == [1, 2]


def test_an_output_that_raises_costs_nothing() -> None:
    class Broken:
        name = "broken"

        def play(self, tone: ToneName) -> bool:
            raise RuntimeError("the USB speaker was pulled out")

    rung: list[int] = []
    assert Sounds([Broken()]).play("declined", bell=lambda: rung.append(1)) == "bell"
    assert rung == [1]


class RecordingPWMPin(MockPWMPin):  # type: ignore[misc]
    """gpiozero's mock PWM pin, remembering each frequency the buzzer was set to."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.frequencies: list[float | None] = []

    def _set_frequency(self, value: float | None) -> None:
        self.frequencies.append(value)
        super()._set_frequency(value)


@pytest.fixture
def mock_pins() -> Any:
    saved = Device.pin_factory
    Device.pin_factory = MockFactory(pin_class=RecordingPWMPin)
    yield Device.pin_factory
    Device.pin_factory.reset()
    Device.pin_factory = saved


def _play_and_wait(buzzer: GpioOutput, tone: ToneName) -> None:
    assert Sounds([buzzer]).play(tone, bell=pytest.fail) == "gpio"
    time.sleep(sum(s for _, s in TONES[tone]) + 0.3)


def test_a_passive_buzzer_plays_each_notes_pitch(mock_pins: Any) -> None:
    buzzer = GpioOutput(pin=18, kind="passive")
    for tone in TONE_NAMES:
        _play_and_wait(buzzer, tone)
    pin = mock_pins.pin(18)
    played = [f for f in pin.frequencies if f not in (None, 880)]  # 880: opened at A5
    wanted = [f for tone in TONE_NAMES for f, _ in TONES[tone] if f]
    assert [round(f) for f in played] == [round(f) for f in wanted if f != 880]
    assert pin.state == 0  # silent between tones


def test_an_active_buzzer_plays_the_rhythm(mock_pins: Any) -> None:
    buzzer = GpioOutput(pin=17, kind="active")
    _play_and_wait(buzzer, "attention")
    states = [bool(s.state) for s in mock_pins.pin(17).states]
    assert states[1:] == [True, False] * 3  # after the pin's first (off) state


@pytest.mark.filterwarnings("ignore::gpiozero.PinFactoryFallback")
def test_no_gpio_on_this_machine_never_raises() -> None:
    """Without a pin factory that works here (no Pi), the buzzer stays quiet, once."""
    saved = Device.pin_factory
    Device.pin_factory = None
    try:
        buzzer = GpioOutput(pin="BOARD99")
        rung: list[int] = []
        assert Sounds([buzzer]).play("approved", bell=lambda: rung.append(1)) == "bell"
        assert buzzer.trouble is not None and rung == [1]
    finally:
        Device.pin_factory = saved


def test_the_settings() -> None:
    assert sounds_from_settings({"output": "off"}).play("approved", bell=pytest.fail) == "off"
    rung: list[int] = []
    assert sounds_from_settings({"output": "bell"}).play("approved", lambda: rung.append(1))
    assert rung == [1]
    for bad in (
        {"output": "loud"},
        {"volume": 2},
        {"volume": True},
        {"buzzer": "x", "gpio_pin": 4},
    ):
        with pytest.raises(SoundSettingError):
            sounds_from_settings(bad)
    chosen = sounds_from_settings({"output": "gpio", "gpio_pin": 12, "buzzer": "active"})
    assert [o.name for o in chosen.outputs] == ["gpio"]
