"""A kiosk without its camera stays up and picks the camera up once it is there: the
loop tries an unopenable camera again every few seconds, a camera whose reads keep
failing (a USB webcam unplugged and plugged back) is closed and opened again, and the
configured choice is made again at each open (a webcam plugged in after boot is found)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import cv2
import pytest

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


def test_a_replay_frame_half_written_counts_the_camera_unavailable_until_it_is_whole(
    tmp_path: Path,
) -> None:
    """A frame being replaced is first an empty file, then its first bytes: OpenCV raises
    on the empty one (`cv2.error`), and that ended the thread that opens the camera
    again, so the camera never came back. Each read is a camera unavailable, tried again
    until the file is whole, then the sale's code is read."""
    image = tmp_path / "frame.png"
    source = ChosenAtOpen({"source": "replay", "path": str(image)})
    events = Events()
    loop = ScanLoop(source, make_decoder(), events, stats_interval_s=0.05, retry_s=0.05)
    loop.start()
    try:
        assert events.wait_for(lambda: "unavailable" in _states(events))
        whole = cv2.imencode(".png", render_scene(Scene(payloads=[TOKEN.encode()])))[1]
        for part in (b"", whole.tobytes()[:100]):
            image.write_bytes(part)  # created, not yet written; then its first bytes
            tries = _states(events).count("unavailable") + 2

            def tried_again(at_least: int = tries) -> bool:
                return _states(events).count("unavailable") >= at_least

            assert events.wait_for(tried_again)  # the opening thread lives on
            assert "not an image" in (loop.stats.last_error or "")
        image.write_bytes(whole.tobytes())
        loop.arm()
        assert events.wait_for(lambda: bool(events.of(TokenRead)), timeout=10)
        assert events.wait_for(lambda: _states(events)[-1] == "running")
    finally:
        loop.stop()


class OddCamera(FlakyCamera):
    """A camera whose driver raises errors of its own kind, not `CameraUnavailable`
    (picamera2 and V4L2 raise RuntimeError, OSError, even AttributeError mid-sale)."""

    name = "odd"

    def __init__(self, frame: Frame, missing: int, error: type[Exception]) -> None:
        super().__init__(frame, missing)
        self.error = error

    def open(self) -> None:
        self.opens += 1
        if self.opens <= self.missing or self.unplugged:
            raise self.error("camera driver fell over")

    def read(self) -> Frame | None:
        time.sleep(0.005)
        if self.unplugged:
            raise self.error("camera driver fell over mid-read")
        return self.frame


@pytest.mark.parametrize("error", [RuntimeError, AttributeError, OSError, ValueError])
def test_a_camera_raising_errors_of_its_own_kind_is_unavailable_logged_and_comes_back(
    error: type[Exception], caplog: pytest.LogCaptureFixture
) -> None:
    """Neither `start()` nor the threads behind it end on a driver's own error: the camera
    is unavailable (the screen says it needs attention, the sale goes on), the error's
    traceback is logged (a bug is not hidden), and the camera is read once it works."""
    caplog.set_level(logging.INFO, logger="qrpos.scanner.loop")
    camera = OddCamera(render_grey(Scene(payloads=[TOKEN.encode()])), missing=2, error=error)
    events = Events()
    loop = ScanLoop(
        camera, make_decoder(), events, stats_interval_s=0.05, retry_s=0.05, reopen_after=3
    )
    loop.start()  # the first open raises: start() does not
    try:
        assert events.wait_for(lambda: "running" in _states(events))
        assert camera.opens == 3 and _states(events).count("unavailable") == 2
        # each failed open logged, the first of the run with its traceback
        opened = [r for r in caplog.records if "camera open failed" in r.getMessage()]
        assert len(opened) == 2 and error.__name__ in opened[0].getMessage()
        assert opened[0].exc_info and opened[0].exc_info[0] is error
        assert not opened[1].exc_info
        # its reads fail mid-sale: logged with the traceback once, reopened, back again
        camera.unplugged = True
        assert events.wait_for(lambda: _states(events)[-1] == "unavailable", timeout=30)
        read = [r for r in caplog.records if "camera read failed" in r.getMessage()]
        assert read and read[0].exc_info and read[0].exc_info[0] is error
        assert all(not r.exc_info for r in read[1:])
        camera.unplugged = False
        assert events.wait_for(lambda: _states(events)[-1] == "running", timeout=10)
        loop.arm()
        assert events.wait_for(lambda: bool(events.of(TokenRead)), timeout=10)
    finally:
        loop.stop()


def test_the_replay_camera_survives_a_writer_rewriting_its_frame_mid_read(
    tmp_path: Path,
) -> None:
    """A writer thread truncates and rewrites the frame file in small pieces, over and
    over, while the loop opens the replay camera again and again: the reads land on empty,
    cut and whole files in any order. The thread that opens the camera must outlive every
    one of them (each unreadable read is a camera unavailable), and once an open finds
    the file whole, the sale's code is read."""
    image = tmp_path / "frame.png"
    whole = cv2.imencode(".png", render_scene(Scene(payloads=[TOKEN.encode()])))[1].tobytes()
    source = ChosenAtOpen({"source": "replay", "path": str(image)})
    events = Events()
    loop = ScanLoop(source, make_decoder(), events, stats_interval_s=0.02, retry_s=0.01)
    stop = threading.Event()
    rewrites = 0

    def writer() -> None:
        nonlocal rewrites
        step = max(1, len(whole) // 8)
        while not stop.is_set():
            with image.open("wb") as out:  # truncated: an empty file first
                time.sleep(0.02)
                for at in range(0, len(whole), step):
                    out.write(whole[at : at + step])
                    out.flush()
                    time.sleep(0.02)  # slower than the loop tries again
            rewrites += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    loop.arm()  # the first whole read is the sale's code
    loop.start()
    try:

        def half_read() -> int:
            return sum(
                "not an image" in (e.last_error or "")
                for e in events.of(ScanStats)
                if isinstance(e, ScanStats)
            )

        # opens landed on a file being written, and the opening thread went on
        assert events.wait_for(lambda: half_read() >= 1, timeout=10)
        # and once an open finds the file whole, the sale's code is read
        assert events.wait_for(lambda: bool(events.of(TokenRead)), timeout=10)
        # the writer finishes a round while the loop runs (the file is whole after its last
        # piece, before the writer closes it and counts: so waited for, not read at once;
        # CI read it as 0 once)
        deadline = time.monotonic() + 10
        while rewrites < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rewrites >= 1
    finally:
        stop.set()
        loop.stop()
