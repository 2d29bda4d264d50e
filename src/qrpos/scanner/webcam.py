"""A USB webcam through OpenCV's V4L2 backend (OpenCV is loaded only when one is used)."""

from __future__ import annotations

from typing import Any

from qrpos.said import say
from qrpos.scanner.frames import CameraUnavailable, Frame, to_grey


class WebcamSource:
    """A UVC webcam: V4L2, MJPG when offered (more fps over USB 2), one-frame buffer."""

    def __init__(
        self,
        device: int | str = 0,
        *,
        width: int = 640,
        height: int = 480,
        fps: int = 30,
        capture_factory: Any = None,
    ) -> None:
        self.name = f"webcam {device}"
        self._device = device
        self._size = (width, height)
        self._fps = fps
        # the seam for tests: something called like cv2.VideoCapture(device, api)
        self._factory = capture_factory
        self._cap: Any = None

    def open(self) -> None:
        """Open the device and ask for MJPG, the size, the rate and a one-frame buffer."""
        import cv2  # about 35 MB: only a kiosk with a webcam pays for it

        cap = (self._factory or cv2.VideoCapture)(self._device, cv2.CAP_V4L2)
        if cap is None or not cap.isOpened():
            raise CameraUnavailable(
                say(
                    "camera.no_webcam",
                    "no webcam at {device}: plug in a USB (UVC) camera, check "
                    "`ls /dev/video*` and that this user is in the `video` group",
                    device=repr(self._device),
                )
            )
        # set() returns False when the camera does not offer a setting; that is fine
        cap.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter.fourcc(*"MJPG"))
        cap.set(cv2.CAP_PROP_FRAME_WIDTH, self._size[0])
        cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self._size[1])
        cap.set(cv2.CAP_PROP_FPS, self._fps)
        # buffer of one: a decoded frame is the newest, never one from seconds ago
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
        self._cap = cap

    def read(self) -> Frame | None:
        """The next frame in greyscale, or None if the camera gave none."""
        if self._cap is None:
            return None
        ok, image = self._cap.read()
        if not ok or image is None:
            return None
        return to_grey(image)

    def close(self) -> None:
        """Release the device."""
        if self._cap is not None:
            self._cap.release()
            self._cap = None
