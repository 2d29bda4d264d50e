"""Frame sources: the Pi camera adapter (with a fake camera), webcam, replay, choice, probe."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qrpos.scanner import (
    CameraUnavailable,
    PiCameraSource,
    ReplaySource,
    VirtualPhone,
    WebcamSource,
    make_decoder,
    open_source,
    probe_camera,
)
from qrpos.scanner.picamera import AF_MODE_CONTINUOUS, AF_RANGE_MACRO
from qrpos.scanner.synthetic import Scene

from .qrset import PAYLOADS, scene_for


class FakePicamera2:
    """Stands in for picamera2.Picamera2 behind PiCameraSource's camera_factory seam."""

    def __init__(self, *, autofocus: bool = True, stride: int = 704) -> None:
        self.camera_controls: dict[str, Any] = {"ExposureValue": (-8.0, 8.0, 0.0)}
        if autofocus:
            self.camera_controls |= {"AfMode": (0, 2, 0), "AfRange": (0, 2, 0)}
        self.camera_properties = {"ScalerCropMaximum": (0, 0, 4608, 2592)}
        self.stride = stride
        self.config: dict[str, Any] | None = None
        self.started = self.stopped = self.closed = False

    def create_video_configuration(self, **kwargs: Any) -> dict[str, Any]:
        return kwargs

    def configure(self, config: dict[str, Any]) -> None:
        self.config = config

    def start(self) -> None:
        self.started = True

    def capture_array(self, stream: str) -> np.ndarray[Any, Any]:
        assert stream == "lores"
        w, h = self.config["lores"]["size"] if self.config else (0, 0)
        yuv = np.full((h * 3 // 2, self.stride), 128, np.uint8)
        yuv[:h, :w] = 200  # Y plane; padding and chroma stay 128
        return yuv

    def stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        self.closed = True


def test_picamera_asks_for_a_yuv420_lores_stream_at_fixed_30fps_with_macro_autofocus() -> None:
    cam = FakePicamera2()
    source = PiCameraSource(exposure_value=-1.5, roi=0.5, camera_factory=lambda: cam)
    source.open()
    assert cam.started and cam.config is not None
    assert cam.config["lores"] == {"size": (640, 480), "format": "YUV420"}
    controls = cam.config["controls"]
    assert controls["FrameDurationLimits"] == (33333, 33333)
    assert controls["AfMode"] == AF_MODE_CONTINUOUS and controls["AfRange"] == AF_RANGE_MACRO
    assert controls["ExposureValue"] == -1.5
    assert controls["ScalerCrop"] == (1152, 648, 2304, 1296)  # the centre half of the view
    frame = source.read()
    assert frame is not None and frame.shape == (480, 640) and frame.dtype == np.uint8
    assert (frame == 200).all()  # the Y plane only, no stride padding, no chroma
    source.close()
    assert cam.stopped and cam.closed


def test_picamera_without_autofocus_gets_no_focus_controls() -> None:
    cam = FakePicamera2(autofocus=False)
    source = PiCameraSource(camera_factory=lambda: cam)
    source.open()
    assert cam.config is not None
    assert "AfMode" not in cam.config["controls"]
    assert "ExposureValue" not in cam.config["controls"]
    assert "ScalerCrop" not in cam.config["controls"]


def test_picamera_that_fails_to_start_is_closed_and_reported() -> None:
    cam = FakePicamera2()

    def broken(config: dict[str, Any]) -> None:
        raise RuntimeError("Device or resource busy")

    cam.configure = broken  # type: ignore[method-assign]
    with pytest.raises(CameraUnavailable, match=r"would not start.*busy"):
        PiCameraSource(camera_factory=lambda: cam).open()
    assert cam.closed


def test_choosing_the_pi_camera_without_picamera2_names_the_fix() -> None:
    with pytest.raises(CameraUnavailable, match="apt install python3-picamera2"):
        open_source({"source": "picamera"})
    with pytest.raises(CameraUnavailable, match="apt install python3-picamera2"):
        PiCameraSource().open()
    check = probe_camera({"source": "picamera"})
    assert not check.ok and check.fps is None and "python3-picamera2" in str(check.message)


def test_scanner_imports_without_picamera2_and_never_loads_it() -> None:
    code = (
        "import sys, qrpos.scanner as s\n"
        "s.make_decoder(); s.open_source({'source': 'virtual'})\n"
        "print('picamera2' in sys.modules, 'textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"source": "kinect"}, "not one of picamera, webcam, replay, virtual, auto"),
        ({"source": "replay"}, "needs path"),
        ({"source": "virtual", "fps": "fast"}, "fps must be a number"),
        ({"source": "webcam", "device": 1.5}, "device must be"),
    ],
)
def test_bad_scanner_settings_get_a_clear_message(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(CameraUnavailable, match=message):
        open_source(settings)


class FakeCapture:
    """Stands in for cv2.VideoCapture behind WebcamSource's capture_factory seam."""

    def __init__(self, device: Any, api: int, *, opened: bool = True) -> None:
        self.device, self.api, self.opened = device, api, opened
        self.props: dict[int, float] = {}
        self.released = False

    def isOpened(self) -> bool:
        return self.opened

    def set(self, prop: int, value: float) -> bool:
        self.props[prop] = value
        return True

    def read(self) -> tuple[bool, np.ndarray[Any, Any]]:
        return True, np.zeros((480, 640, 3), np.uint8)

    def release(self) -> None:
        self.released = True


def test_webcam_opens_v4l2_with_mjpg_and_a_one_frame_buffer() -> None:
    import cv2

    made: list[FakeCapture] = []

    def factory(device: Any, api: int) -> FakeCapture:
        made.append(FakeCapture(device, api))
        return made[-1]

    source = WebcamSource("/dev/video2", capture_factory=factory)
    source.open()
    (cap,) = made
    assert cap.device == "/dev/video2" and cap.api == cv2.CAP_V4L2
    assert cap.props[cv2.CAP_PROP_FOURCC] == cv2.VideoWriter.fourcc(*"MJPG")
    assert cap.props[cv2.CAP_PROP_BUFFERSIZE] == 1
    frame = source.read()
    assert frame is not None and frame.shape == (480, 640)
    source.close()
    assert cap.released


def test_missing_webcam_is_a_clear_message() -> None:
    source = WebcamSource(7, capture_factory=lambda d, a: FakeCapture(d, a, opened=False))
    with pytest.raises(CameraUnavailable, match=r"no webcam at 7.*video"):
        source.open()


def test_replay_over_a_folder_decodes_each_image_then_ends(
    scene_file: Callable[[Scene], Path], tmp_path: Path
) -> None:
    for i, case in enumerate(["plain", "trailing_space"]):
        (tmp_path / f"{i}.png").write_bytes(scene_file(scene_for([PAYLOADS[case]])).read_bytes())
    (tmp_path / "readme.txt").write_text("ignored: not an image")
    source = open_source({"source": "replay", "path": str(tmp_path), "fps": 1000})
    assert isinstance(source, ReplaySource)
    source.open()
    decoder = make_decoder()
    read = []
    while (frame := source.read()) is not None:
        read.extend(decoder.decode(frame))
    assert read == [PAYLOADS["plain"], PAYLOADS["trailing_space"]]


def test_replay_of_a_broken_image_says_which_file(tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"\x89PNG broken")
    with pytest.raises(CameraUnavailable, match=r"bad\.png"):
        ReplaySource([tmp_path]).open()


def test_probe_reports_the_frame_rate_of_a_working_source() -> None:
    check = probe_camera({"source": "virtual", "fps": 30}, seconds=0.5)
    assert check.ok, check.message
    assert check.fps is not None and check.fps > 0
    assert f"{check.fps:.1f} fps, 640x480" in str(check.message)


def test_virtual_phone_shows_the_token_it_is_given_and_nothing_once_removed() -> None:
    phone = VirtualPhone(fps=1000)
    phone.open()
    decoder = make_decoder()
    token = "vqr_virtual Сайн \t"
    phone.present(token)
    frame = phone.read()
    assert frame is not None and decoder.decode(frame) == [token.encode()]
    phone.remove()
    frame = phone.read()
    assert frame is not None and decoder.decode(frame) == []
    phone.close()
    assert phone.read() is None
