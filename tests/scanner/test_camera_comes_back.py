"""A kiosk without its camera stays up and picks the camera up once it is there: the
loop tries an unopenable camera again every few seconds, a camera whose reads keep
failing (a USB webcam unplugged and plugged back) is closed and opened again, and the
configured choice is made again at each open (a webcam plugged in after boot is found)."""

from __future__ import annotations

import time
from pathlib import Path

import cv2

from qrpos.scanner import (
    CameraUnavailable,
    ChosenAtOpen,
    Frame,
    ScanLoop,
    ScanStats,
    TokenRead,
    make_decoder,
)
from qrpos.scanner.synthetic import Scene, render_grey, render_scene

from .test_loop import Events

TOKEN = "vqr_back4TEST"


class FlakyCamera:
    """A camera that is missing for its first `missing` opens, then reads `frame`; its
    reads fail while `unplugged` is set (a seam we own)."""

    name = "flaky"

    def __init__(self, frame: Frame, missing: int) -> None:
        self.frame = frame
        self.missing = missing
        self.opens = 0
        self.closes = 0
        self.unplugged = False

    def open(self) -> None:
        self.opens += 1
        if self.opens <= self.missing or self.unplugged:
            raise CameraUnavailable("no camera found: plug it in")

    def read(self) -> Frame | None:
        time.sleep(0.005)
        if self.unplugged:
            raise OSError("device gone")
        return self.frame

    def close(self) -> None:
        self.closes += 1


def _states(events: Events) -> list[str]:
    return [e.camera_state for e in events.of(ScanStats) if isinstance(e, ScanStats)]


def test_a_camera_missing_at_start_is_tried_again_until_it_reads() -> None:
    camera = FlakyCamera(render_grey(Scene(payloads=[TOKEN.encode()])), missing=3)
    events = Events()
    loop = ScanLoop(camera, make_decoder(), events, stats_interval_s=0.05, retry_s=0.05)
    loop.start()
    try:
        assert events.wait_for(lambda: "unavailable" in _states(events))
        loop.arm()
        assert events.wait_for(lambda: bool(events.of(TokenRead)), timeout=10)
        assert camera.opens == 4
        assert events.wait_for(lambda: _states(events)[-1] == "running")
        assert loop.stats.last_error is None
    finally:
        loop.stop()


def test_a_camera_whose_reads_keep_failing_is_opened_again() -> None:
    camera = FlakyCamera(render_grey(Scene(payloads=[TOKEN.encode()])), missing=0)
    events = Events()
    loop = ScanLoop(
        camera, make_decoder(), events, stats_interval_s=0.05, retry_s=0.05, reopen_after=3
    )
    loop.start()
    try:
        assert events.wait_for(lambda: "running" in _states(events))
        camera.unplugged = True
        assert events.wait_for(lambda: "unavailable" in _states(events), timeout=30)
        camera.unplugged = False
        assert events.wait_for(lambda: _states(events)[-1] == "running", timeout=10)
        assert camera.closes >= 1 and camera.opens >= 3
        loop.arm()
        assert events.wait_for(lambda: bool(events.of(TokenRead)), timeout=10)
    finally:
        loop.stop()


def test_stop_ends_the_retries_of_a_camera_that_never_comes() -> None:
    camera = FlakyCamera(render_grey(Scene(payloads=[])), missing=10**6)
    loop = ScanLoop(camera, make_decoder(), Events(), retry_s=0.02)
    loop.start()
    time.sleep(0.2)
    started = time.monotonic()
    loop.stop()
    assert time.monotonic() - started < 1.0
    tries = camera.opens
    time.sleep(0.1)
    assert camera.opens == tries  # no more tries after stop


def test_the_configured_camera_is_chosen_again_at_each_open(tmp_path: Path) -> None:
    """A replay folder standing for a camera that appears after boot: not there at the
    first open, read once it exists."""
    image = tmp_path / "later" / "frame.png"
    source = ChosenAtOpen({"source": "replay", "path": str(image)})
    events = Events()
    loop = ScanLoop(source, make_decoder(), events, stats_interval_s=0.05, retry_s=0.05)
    loop.start()
    try:
        assert events.wait_for(lambda: "unavailable" in _states(events))
        image.parent.mkdir()
        # the camera appears whole: written aside and renamed in, as the loop retrying
        # every 50 ms could otherwise open the file half written (seen on a busy machine)
        aside = tmp_path / "frame.png"
        assert cv2.imwrite(str(aside), render_scene(Scene(payloads=[TOKEN.encode()])))
        aside.replace(image)
        loop.arm()
        assert events.wait_for(lambda: bool(events.of(TokenRead)), timeout=10)
    finally:
        loop.stop()
