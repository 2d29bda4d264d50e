"""Choosing a frame source from the `[scanner]` settings, and checking a camera works.

Settings (the `[scanner]` table; all optional)::

    source = "auto"          # picamera | webcam | replay | virtual | auto
    decoder = "zxing"        # zxing | zbar  (see make_decoder)
    width = 640              # frame size the decoder sees
    height = 480
    fps = 30
    exposure_value = -1.0    # picamera: negative darkens bright phone screens
    roi = 0.8                # picamera: centre crop, fraction of the full view
    device = 0               # webcam: index or /dev/videoN
    path = "/some/folder"    # replay: an image file, a folder, or a list of them
    loop = false             # replay: start over at the end
    dark_mode = false        # virtual: the phone shows a dark-mode pass

"auto" takes the Pi camera when picamera2 is installed, else a webcam when one is
plugged in; it never falls back to the virtual phone (a kiosk must not scan a fake).
"""

from __future__ import annotations

import importlib.util
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrpos.said import Said, say
from qrpos.scanner.frames import CameraUnavailable, Frame, FrameSource
from qrpos.scanner.picamera import PICAMERA_FIX, PiCameraSource
from qrpos.scanner.replay import ReplaySource
from qrpos.scanner.virtual import VirtualPhone
from qrpos.scanner.webcam import WebcamSource

log = logging.getLogger("qrpos.scanner")

SOURCE_NAMES = ("picamera", "webcam", "replay", "virtual", "auto")
#: below this a phone waved at the camera is missed; `probe_camera` calls it a failure
MIN_USABLE_FPS = 10.0


@dataclass(frozen=True)
class CameraCheck:
    """The result of `probe_camera`, for `qrpos doctor`."""

    ok: bool
    fps: float | None
    #: what was found, in words for any language (`qrpos.said`)
    message: Said


def _num(settings: Mapping[str, Any], key: str, default: float) -> float:
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CameraUnavailable(
            say(
                "camera.not_a_number",
                "[scanner] {setting} must be a number, not {value}",
                setting=key,
                value=repr(value),
            )
        )
    return float(value)


def _picamera_installed() -> bool:
    return importlib.util.find_spec("picamera2") is not None


def _webcam_present() -> bool:
    return any(Path("/dev").glob("video[0-9]*"))


def open_source(settings: Mapping[str, Any]) -> FrameSource:
    """The frame source the settings choose (not yet opened).

    Raises `CameraUnavailable` with the fix when the choice cannot work on this
    machine (e.g. picamera without picamera2) or a setting is invalid.
    """
    kind = str(settings.get("source", "auto")).strip().lower()
    if kind not in SOURCE_NAMES:
        raise CameraUnavailable(
            say(
                "camera.unknown_source",
                "[scanner] source {value} is not one of {choices}",
                value=repr(kind),
                choices=", ".join(SOURCE_NAMES),
            )
        )
    width = int(_num(settings, "width", 640))
    height = int(_num(settings, "height", 480))
    fps = _num(settings, "fps", 30)
    if kind == "auto":
        if _picamera_installed():
            kind = "picamera"
        elif _webcam_present():
            kind = "webcam"
        else:
            raise CameraUnavailable(
                say(
                    "camera.none_found",
                    "no camera found: {fix}; or plug in a USB webcam",
                    fix=PICAMERA_FIX,
                )
            )
    if kind == "picamera":
        if not _picamera_installed():
            raise CameraUnavailable(PICAMERA_FIX)
        try:
            return PiCameraSource(
                width=width,
                height=height,
                fps=fps,
                exposure_value=_num(settings, "exposure_value", 0.0),
                roi=_num(settings, "roi", 1.0),
            )
        except ValueError as exc:
            raise CameraUnavailable(
                say("camera.bad_setting", "[scanner] {detail}", detail=Said.plain(str(exc)))
            ) from None
    if kind == "webcam":
        device = settings.get("device", 0)
        if not isinstance(device, int | str) or isinstance(device, bool):
            raise CameraUnavailable(
                say(
                    "camera.bad_device",
                    "[scanner] device must be an index or a path, not {value}",
                    value=repr(device),
                )
            )
        return WebcamSource(device, width=width, height=height, fps=int(fps))
    if kind == "replay":
        raw = settings.get("path")
        if not raw:
            raise CameraUnavailable(
                say(
                    "camera.replay_needs_path",
                    '[scanner] source = "replay" needs path = an image or folder',
                )
            )
        paths = [Path(p) for p in (raw if isinstance(raw, list) else [raw])]
        return ReplaySource(paths, loop=bool(settings.get("loop", False)), fps=fps)
    return VirtualPhone(
        width=width, height=height, fps=min(fps, 15.0), dark_mode=bool(settings.get("dark_mode"))
    )


class ChosenAtOpen:
    """The configured camera, chosen when it is opened rather than when the kiosk starts.

    A kiosk that boots without its camera (unplugged, not yet enumerated, picamera2 not
    installed yet) must stay up, say so on screen and pick the camera up once it is there:
    `ScanLoop` opens it again every few seconds, and each open here runs the choice
    (`open_source`) again, so a webcam plugged in later is found.
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings
        self._inner: FrameSource | None = None
        self.name = str(settings.get("source", "auto"))

    def open(self) -> None:
        inner = open_source(self.settings)
        inner.open()
        self._inner, self.name = inner, inner.name

    def read(self) -> Frame | None:
        return self._inner.read() if self._inner is not None else None

    def close(self) -> None:
        inner, self._inner = self._inner, None
        if inner is not None:
            inner.close()


def probe_camera(settings: Mapping[str, Any], seconds: float = 2.0) -> CameraCheck:
    """Open the configured source, count frames for `seconds`, close it again."""
    try:
        source = open_source(settings)
        source.open()
    except CameraUnavailable as exc:
        return CameraCheck(False, None, exc.said or Said.plain(str(exc)))
    frames = 0
    size = ""
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            frame = source.read()
            if frame is None:
                time.sleep(0.01)
                continue
            frames += 1
            size = f"{frame.shape[1]}x{frame.shape[0]}"
    except Exception as exc:
        log.warning("camera %s: reading failed (%s)", source.name, type(exc).__name__)
        why = say(
            "camera.reading_failed",
            "{source}: reading failed: {why}",
            source=source.name,
            why=str(exc) or type(exc).__name__,
        )
        return CameraCheck(False, None, why)
    finally:
        source.close()
    elapsed = max(time.monotonic() - started, 1e-9)
    fps = frames / elapsed
    if frames == 0:
        none = say(
            "camera.no_frames",
            "{source}: opened, but no frames came in {seconds} s",
            source=source.name,
            seconds=f"{seconds:g}",
        )
        return CameraCheck(False, 0.0, none)
    if fps < MIN_USABLE_FPS:
        slow = say(
            "camera.slow",
            "{source}: only {fps} fps ({size}); needs {need}+",
            source=source.name,
            fps=f"{fps:.1f}",
            size=size,
            need=f"{MIN_USABLE_FPS:g}",
        )
        return CameraCheck(False, fps, slow)
    fine = say(
        "camera.ok", "{source}: {fps} fps, {size}", source=source.name, fps=f"{fps:.1f}", size=size
    )
    return CameraCheck(True, fps, fine)
