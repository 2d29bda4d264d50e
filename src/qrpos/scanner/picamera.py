"""The Raspberry Pi camera through picamera2, imported only when this source is chosen.

A small YUV420 "lores" stream gives greyscale for free (its Y plane), a fixed frame
duration holds 30 fps, continuous autofocus with the macro range keeps a phone held
close sharp (on cameras with autofocus, e.g. Camera Module 3), a negative exposure
value stops a bright phone screen from blooming, and a centre ScalerCrop narrows the
view to where the customer holds the phone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from qrpos.said import Said, say
from qrpos.scanner.frames import CameraUnavailable, Frame

log = logging.getLogger("qrpos.scanner")

PICAMERA_FIX = say(
    "camera.picamera_missing",
    "the Pi camera needs picamera2: apt install python3-picamera2 (Raspberry Pi OS), "
    'and a venv made with --system-site-packages; or set [scanner] source = "webcam"',
)

# libcamera's enum values (controls.AfModeEnum.Continuous, controls.AfRangeEnum.Macro),
# so libcamera's Python module need not be imported here
AF_MODE_CONTINUOUS = 2
AF_RANGE_MACRO = 1


def _default_camera_factory() -> Any:
    try:
        from picamera2 import Picamera2
    except ImportError:
        raise CameraUnavailable(PICAMERA_FIX) from None
    try:
        return Picamera2()
    except (IndexError, RuntimeError) as exc:
        # Picamera2() raises IndexError when libcamera sees no camera at all
        log.warning("picamera2 found no camera (%s)", type(exc).__name__)
        raise CameraUnavailable(
            say(
                "camera.no_pi_camera",
                "no Pi camera found: check the ribbon cable and `rpicam-hello --list-cameras`",
            )
        ) from None


class PiCameraSource:
    """Frames from the lores stream of a picamera2 camera.

    `camera_factory` is the seam for tests: it returns an object with picamera2's
    ``camera_controls``, ``camera_properties``, ``create_video_configuration``,
    ``configure``, ``set_controls``, ``start``, ``capture_array``, ``stop`` and ``close``.
    """

    name = "picamera"

    def __init__(
        self,
        *,
        width: int = 640,
        height: int = 480,
        fps: float = 30.0,
        exposure_value: float = 0.0,
        roi: float = 1.0,
        camera_factory: Callable[[], Any] | None = None,
    ) -> None:
        if not 0.2 <= roi <= 1.0:
            raise ValueError("picamera roi must be between 0.2 and 1.0 (fraction of the view)")
        if not -8.0 <= exposure_value <= 8.0:
            raise ValueError("picamera exposure_value must be between -8 and 8")
        self._size = (width, height)
        self._frame_us = round(1_000_000 / fps)
        self._ev = exposure_value
        self._roi = roi
        self._factory = camera_factory or _default_camera_factory
        self._cam: Any = None

    def controls(self, camera: Any) -> dict[str, Any]:
        """The controls this camera gets: frame rate, exposure, focus (if it has AF), ROI."""
        available = getattr(camera, "camera_controls", {}) or {}
        controls: dict[str, Any] = {"FrameDurationLimits": (self._frame_us, self._frame_us)}
        if self._ev:
            controls["ExposureValue"] = self._ev
        if "AfMode" in available:
            controls["AfMode"] = AF_MODE_CONTINUOUS
            if "AfRange" in available:
                controls["AfRange"] = AF_RANGE_MACRO
        if self._roi < 1.0:
            props = getattr(camera, "camera_properties", {}) or {}
            full = props.get("ScalerCropMaximum") or props.get("PixelArraySize")
            if full:
                x0, y0, fw, fh = full if len(full) == 4 else (0, 0, *full)
                w, h = int(fw * self._roi), int(fh * self._roi)
                controls["ScalerCrop"] = (x0 + (fw - w) // 2, y0 + (fh - h) // 2, w, h)
        return controls

    def open(self) -> None:
        """Configure the camera with a YUV420 lores stream and start it."""
        cam = self._factory()
        try:
            config = cam.create_video_configuration(
                main={"size": (self._size[0] * 2, self._size[1] * 2)},
                lores={"size": self._size, "format": "YUV420"},
                buffer_count=4,
                controls=self.controls(cam),
            )
            cam.configure(config)
            cam.start()
        except Exception as exc:
            cam.close()
            log.warning("the Pi camera would not start: %s: %s", type(exc).__name__, exc)
            raise CameraUnavailable(
                say(
                    "camera.picamera_start",
                    "the Pi camera would not start ({detail}); is another program (rpicam-*, "
                    "another qrpos) using it?",
                    detail=Said.plain(str(exc) or type(exc).__name__),
                )
            ) from None
        self._cam = cam

    def read(self) -> Frame | None:
        """The Y plane of the next lores frame, sliced to the configured size."""
        if self._cam is None:
            return None
        yuv = self._cam.capture_array("lores")
        w, h = self._size
        # the array is (h * 3/2, stride): the first h rows are Y, padded to the stride
        y_plane: Frame = yuv[:h, :w]
        return y_plane

    def close(self) -> None:
        """Stop and release the camera."""
        cam, self._cam = self._cam, None
        if cam is not None:
            try:
                cam.stop()
            finally:
                cam.close()
