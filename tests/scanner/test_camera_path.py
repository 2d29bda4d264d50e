"""The camera path as the kiosk runs it: light (no OpenCV), lean when disarmed, quick to
hand over, and the virtual phone's own numpy rendering."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from qrpos.scanner import ScanLoop, TokenRead, VirtualPhone, make_decoder
from qrpos.scanner.frames import Frame, to_grey
from qrpos.scanner.loop import GIL_SWITCH_INTERVAL_S
from qrpos.scanner.pixels import area_mean, render_preview
from qrpos.scanner.synthetic import Scene, perspective_transform, render_grey, warp_perspective

from .test_loop import Events, ScriptedSource

CAMERA_PATH = """
import sys
from qrpos.scanner import ScanLoop, VirtualPhone, make_decoder
from qrpos.scanner.pixels import render_preview
import qrpos.kiosk.demo, qrpos.kiosk.production
phone = VirtualPhone(fps=1000)
phone.open()
phone.present("vqr_light")
decoder = make_decoder()
assert decoder.decode(phone.read()) == [b"vqr_light"]
phone.remove()
assert decoder.decode(phone.read()) == []  # the empty counter: every further pass runs
render_preview(phone.read(), 30, 10)
print("cv2" in sys.modules)
"""


def test_the_kiosk_camera_path_never_loads_opencv() -> None:
    # OpenCV is ~35 MB of the kiosk's memory; only a webcam or image files need it
    done = subprocess.run(
        [sys.executable, "-c", CAMERA_PATH], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", done.stderr


class CountingDecoder:
    """The real decoder, counting which of its entry points the loop calls."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = make_decoder()
        self.calls = {"decode": 0, "scan": 0}

    def decode(self, frame: Frame) -> list[bytes]:
        self.calls["decode"] += 1
        return self.inner.decode(frame)

    def scan(self, frame: Frame) -> list[bytes]:
        self.calls["scan"] += 1
        return self.inner.scan(frame)  # type: ignore[attr-defined,no-any-return]


def test_a_disarmed_loop_runs_the_plain_pass_only_and_an_armed_one_every_pass() -> None:
    decoder = CountingDecoder()
    events = Events()
    source = ScriptedSource(render_grey(Scene(noise=4)))
    loop = ScanLoop(source, decoder, events)
    loop.start()
    try:
        assert events.wait_for(lambda: decoder.calls["scan"] >= 3)
        assert decoder.calls["decode"] == 0
        loop.arm()
        assert events.wait_for(lambda: decoder.calls["decode"] >= 3)
    finally:
        loop.stop()


def test_starting_the_loop_makes_threads_hand_the_gil_over_every_millisecond() -> None:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    loop = ScanLoop(ScriptedSource(render_grey(Scene())), make_decoder(), Events())
    try:
        loop.start()
        assert sys.getswitchinterval() == pytest.approx(GIL_SWITCH_INTERVAL_S)
    finally:
        loop.stop()
        sys.setswitchinterval(before)


def shown_at(phone: VirtualPhone) -> float | None:
    """When the phone's pass was first shown (read anew each time: it changes)."""
    return phone.first_shown_at


def test_virtual_phone_notes_when_it_first_shows_each_presented_phone() -> None:
    phone = VirtualPhone(fps=1000)
    phone.open()
    assert phone.first_shown_at is None
    phone.read()  # the empty counter does not count
    assert shown_at(phone) is None
    phone.present("vqr_first")
    before = time.perf_counter()
    phone.read()
    shown = shown_at(phone)
    assert shown is not None
    assert shown >= before
    phone.read()
    assert shown_at(phone) == shown
    phone.present("vqr_second")
    assert shown_at(phone) is None
    phone.close()


def test_a_token_read_reaches_the_listener_while_the_phone_is_in_view() -> None:
    phone = VirtualPhone(fps=30)
    seen = threading.Event()

    def on_event(event: object) -> None:
        if isinstance(event, TokenRead):
            seen.set()

    loop = ScanLoop(phone, make_decoder(), on_event)
    loop.start()
    try:
        loop.arm()
        phone.present("vqr_in view")
        assert seen.wait(10)
        assert phone.first_shown_at is not None
    finally:
        loop.stop()


def test_grey_conversion_is_within_one_level_of_opencv() -> None:
    cv2 = pytest.importorskip("cv2")
    colour = np.random.default_rng(5).integers(0, 256, (120, 160, 3)).astype(np.uint8)
    ours = to_grey(colour).astype(int)
    assert np.abs(ours - cv2.cvtColor(colour, cv2.COLOR_BGR2GRAY)).max() <= 1


def test_numpy_warp_matches_opencv_within_rounding() -> None:
    cv2 = pytest.importorskip("cv2")
    src = np.array([[0, 0], [100, 0], [100, 200], [0, 200]], np.float32)
    dst = np.array([[10, 20], [300, 30], [280, 400], [30, 380]], np.float32)
    matrix = perspective_transform(src, dst)
    assert np.allclose(matrix, cv2.getPerspectiveTransform(src, dst), atol=1e-6)
    image = np.random.default_rng(0).integers(0, 256, (200, 100)).astype(np.float32)
    ours, cover = warp_perspective(image, matrix, (640, 480))
    theirs = cv2.warpPerspective(image, matrix, (640, 480), flags=cv2.INTER_LINEAR)
    # OpenCV 4.x interpolates on a 1/32-pixel grid (INTER_TAB_SIZE), so a pixel may differ by
    # up to a 32nd of the largest neighbour step (255 here); a wrong warp differs by far more
    difference = np.abs(ours - theirs)
    assert difference.max() < 255 / 32 + 0.05
    assert difference.mean() < 1.0
    assert cover.max() == 1.0 and cover[0, 639] == 0.0


@pytest.mark.parametrize(("cols", "rows"), [(30, 12), (80, 24), (320, 240), (700, 500)])
def test_area_mean_is_the_mean_of_each_cell_or_the_nearest_pixel(cols: int, rows: int) -> None:
    frame = np.random.default_rng(2).integers(0, 256, (480, 640)).astype(np.uint8)
    small = area_mean(frame, cols, rows)
    assert small.shape == (rows, cols) and small.dtype == np.uint8
    if cols <= 640:
        ys = np.linspace(0, 480, rows + 1).astype(int)
        xs = np.linspace(0, 640, cols + 1).astype(int)
        cell = frame[ys[1] : ys[2], xs[1] : xs[2]]
        assert small[1, 1] == int(cell.sum()) // cell.size
    assert len(render_preview(frame, cols, rows)) == rows
