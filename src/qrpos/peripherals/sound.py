"""Tones a cashier tells apart without looking: approved, declined, needs attention.

A Raspberry Pi has no PC speaker, so the terminal bell is silent on tty1. The kiosk plays
its own tones instead:

* through ALSA (a USB speaker, HDMI or the 3.5 mm jack), by handing a WAV to `aplay`
  (alsa-utils, on every Raspberry Pi OS image): no audio library in the kiosk's
  process, and a device that vanishes costs one failed `aplay`, never the sale;
* through a piezo buzzer on a GPIO pin (`gpiozero`, where fitted): a passive piezo
  plays the same notes by PWM, an active one (a fixed tone) the same rhythm.

The three tones differ in pitch *and* rhythm, so they stay apart on a buzzer that has one
pitch and for a cashier who hears one pitch badly:

* approved: two short rising notes (C6, E6) - "bright, done";
* declined: one long low note (G4) - "no";
* attention: three short mid notes (A5) - "look at the screen".

`Sounds.play()` never raises and never blocks: it returns at once, the tone plays on
its own, and a missing device is logged once and then left alone (the bell stays as the
fallback). Imports no Textual; numpy only to render the waveform.
"""

from __future__ import annotations

import io
import logging
import shutil
import subprocess
import threading
import time
import wave
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from qrpos.errors import QrposError
from qrpos.present.outcome import ToneName
from qrpos.said import say

log = logging.getLogger("qrpos.sound")

TONE_NAMES: tuple[ToneName, ...] = ("approved", "declined", "attention")

#: (frequency in Hz, seconds) for each note; 0 Hz is a rest
TONES: Mapping[ToneName, tuple[tuple[float, float], ...]] = {
    "approved": ((1046.5, 0.09), (0.0, 0.03), (1318.5, 0.16)),
    "declined": ((392.0, 0.45),),
    "attention": ((880.0, 0.1), (0.0, 0.07), (880.0, 0.1), (0.0, 0.07), (880.0, 0.1)),
}
RATE = 16_000
#: the edges of each note rise and fall over this long (no click)
_RAMP_S = 0.005
OUTPUTS = ("auto", "alsa", "gpio", "bell", "off")


def render(tone: ToneName, volume: float = 0.6, rate: int = RATE) -> npt.NDArray[np.int16]:
    """The tone as 16-bit mono samples at `rate`."""
    amplitude = max(0.0, min(1.0, volume)) * 0.8 * 32767
    parts: list[npt.NDArray[np.float64]] = []
    for frequency, seconds in TONES[tone]:
        n = round(seconds * rate)
        if frequency <= 0:
            parts.append(np.zeros(n))
            continue
        t = np.arange(n) / rate
        note = np.sin(2 * np.pi * frequency * t)
        ramp = min(n // 2, int(_RAMP_S * rate))
        envelope = np.ones(n)
        envelope[:ramp] = np.linspace(0.0, 1.0, ramp)
        envelope[n - ramp :] = np.linspace(1.0, 0.0, ramp)
        parts.append(note * envelope)
    return (np.concatenate(parts) * amplitude).astype("<i2")


def wav_bytes(samples: npt.NDArray[np.int16], rate: int = RATE) -> bytes:
    """`samples` (16-bit mono) as a WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(samples.astype("<i2").tobytes())
    return out.getvalue()


class Output(Protocol):
    """One way of making a sound; `play` returns at once and never raises."""

    name: str

    def play(self, tone: ToneName) -> bool:
        """Start the tone; False when this output cannot play (it then stays quiet)."""
        ...


class AlsaOutput:
    """Tones through `aplay -D <device>`: one player at a time, the newest tone wins."""

    name = "alsa"

    def __init__(
        self,
        device: str = "default",
        volume: float = 0.6,
        aplay: str | None = None,
        on_trouble: Callable[[str], None] | None = None,
    ) -> None:
        self.device = device
        self._aplay = aplay or shutil.which("aplay")
        self._wavs = {name: wav_bytes(render(name, volume)) for name in TONE_NAMES}
        self._player: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._on_trouble = on_trouble or (lambda why: None)
        #: why the last tone did not play (None: it did, or none was played yet)
        self.trouble: str | None = None if self._aplay else "aplay is not installed"

    @property
    def available(self) -> bool:
        return self._aplay is not None

    def play(self, tone: ToneName) -> bool:
        if self._aplay is None:
            return False
        with self._lock:
            if self._player is not None and self._player.poll() is None:
                self._player.kill()  # the newest outcome is the one that matters
            try:
                player = subprocess.Popen(
                    [self._aplay, "-q", "-D", self.device, "-"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    close_fds=True,
                )
            except OSError as exc:
                self._trouble(f"aplay cannot start: {exc.strerror or exc}")
                return False
            self._player = player
        threading.Thread(
            target=self._feed, args=(player, self._wavs[tone]), name="qrpos-sound", daemon=True
        ).start()
        return True

    def _feed(self, player: subprocess.Popen[bytes], wav: bytes) -> None:
        try:
            _, err = player.communicate(wav, timeout=10)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            player.kill()
            return
        if player.returncode not in (0, -9):  # -9: cut short by a newer tone
            line = err.decode("utf-8", "replace").strip().splitlines()
            self._trouble(line[-1] if line else f"aplay exited {player.returncode}")
        else:
            self.trouble = None

    def _trouble(self, why: str) -> None:
        if why != self.trouble:
            log.warning("sound: %s (device %s)", why, self.device)
            self._on_trouble(why)
        self.trouble = why

    def wait(self, timeout: float = 5.0) -> int | None:
        """The last player's exit code once it ends (tests)."""
        player = self._player
        if player is None:
            return None
        deadline = time.monotonic() + timeout
        while player.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        # the feeding thread records trouble after the exit: give it its moment
        time.sleep(0.05)
        return player.poll()


class GpioOutput:
    """A piezo buzzer on a GPIO pin through gpiozero (loaded on first use).

    A passive piezo (`kind = "passive"`) plays each note's pitch by PWM; an active one
    (`"active"`) has its own fixed pitch, so only the rhythm tells the tones apart.
    """

    name = "gpio"

    def __init__(self, pin: int | str = 18, kind: str = "passive", volume: float = 0.6) -> None:
        self.pin, self.kind = pin, kind
        self._duty = max(0.05, min(0.5, volume / 2))
        self._device: Any = None
        self._lock = threading.Lock()
        self.trouble: str | None = None

    def _open(self) -> Any:
        if self._device is None and self.trouble is None:
            try:
                import gpiozero

                if self.kind == "active":
                    self._device = gpiozero.DigitalOutputDevice(self.pin)
                else:
                    self._device = gpiozero.PWMOutputDevice(self.pin, frequency=880)
            except Exception as exc:  # not a Pi, no gpiozero, pin in use: stay quiet
                self.trouble = f"{type(exc).__name__}: {exc}"
                log.warning("sound: the buzzer on GPIO %s cannot be used (%s)", self.pin, exc)
        return self._device

    def play(self, tone: ToneName) -> bool:
        if self._open() is None:
            return False
        threading.Thread(target=self._run, args=(tone,), name="qrpos-buzzer", daemon=True).start()
        return True

    def _run(self, tone: ToneName) -> None:
        if not self._lock.acquire(blocking=False):
            return  # a tone is playing; the buzzer does not queue
        device = self._device
        try:
            for frequency, seconds in TONES[tone]:
                if frequency > 0 and self.kind == "active":
                    device.on()
                elif frequency > 0:
                    device.frequency = frequency
                    device.value = self._duty
                time.sleep(seconds)
                if self.kind == "active":
                    device.off()
                else:
                    device.value = 0
        except Exception as exc:  # the pin vanished mid-tone
            self.trouble = f"{type(exc).__name__}: {exc}"
        finally:
            self._lock.release()


@dataclass
class Sounds:
    """The kiosk's sound: each output in turn until one plays, else the bell."""

    outputs: Sequence[Output] = ()
    enabled: bool = True

    def play(self, tone: ToneName, bell: Callable[[], None] | None = None) -> str:
        """Play `tone`; returns the output that took it ("bell", or "off" when silent)."""
        if not self.enabled:
            return "off"
        for output in self.outputs:
            try:
                if output.play(tone):
                    return output.name
            except Exception:  # an output must never cost a sale
                log.exception("sound: %s failed", output.name)
        if bell is not None:
            bell()
            return "bell"
        return "off"


class SoundSettingError(QrposError, ValueError):
    """A `[sound]` setting that cannot be used; the message names it."""


def sounds_from_settings(settings: Mapping[str, Any]) -> Sounds:
    """`Sounds` from the `[sound]` table of the config file.

    ``output``: "auto" (ALSA when `aplay` is there, and the buzzer when `gpio_pin` is
    set), "alsa", "gpio", "bell" (the terminal bell only) or "off"; ``device`` (ALSA,
    default "default"); ``volume`` 0..1 (0.6); ``gpio_pin`` and ``buzzer`` ("passive"
    or "active").
    """
    output = str(settings.get("output", "auto")).strip().lower()
    if output not in OUTPUTS:
        raise SoundSettingError(
            say(
                "sound.output",
                "[sound] output {value} is not one of {choices}",
                value=repr(output),
                choices=", ".join(OUTPUTS),
            )
        )
    volume = settings.get("volume", 0.6)
    if isinstance(volume, bool) or not isinstance(volume, int | float) or not 0 <= volume <= 1:
        raise SoundSettingError(say("sound.volume", "[sound] volume is a number from 0 to 1"))
    if output == "off" or volume == 0:
        return Sounds(enabled=False)
    outputs: list[Output] = []
    if output in ("auto", "alsa"):
        alsa = AlsaOutput(str(settings.get("device", "default")), float(volume))
        if alsa.available or output == "alsa":
            outputs.append(alsa)
    pin = settings.get("gpio_pin")
    if output == "gpio" or (output == "auto" and pin is not None):
        kind = str(settings.get("buzzer", "passive"))
        if kind not in ("passive", "active"):
            raise SoundSettingError(say("sound.buzzer", '[sound] buzzer is "passive" or "active"'))
        outputs.append(GpioOutput(pin if pin is not None else 18, kind, float(volume)))
    return Sounds(outputs=outputs)
