"""The customer display's worker and its screens: views coalesce (the newest wins), a
slow or failing display holds up no caller, a bug in a sink does not stop the worker, the
camera's view is redrawn only while the view asks for it, a screen that fails is opened
again; the settings; and the KMS seam without pykms."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from PIL import Image, ImageChops

from qrpos.peripherals.customer_picture import draw_view
from qrpos.peripherals.display_port import CustomerDisplay, DisplayTrouble, MemorySink
from qrpos.peripherals.display_settings import (
    DisplaySettingError,
    display_settings,
    open_display,
)
from qrpos.peripherals.kms import FramebufferSink, KmsFramebuffer
from qrpos.peripherals.pole import PoleSink
from qrpos.present.customer import CustomerView, preview_view


def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    give_up = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < give_up, "timed out"
        time.sleep(0.005)


class FakeFramebuffer:
    """A screen of `size` that keeps every picture put up (and can be unplugged)."""

    def __init__(self, size: tuple[int, int] = (800, 480)) -> None:
        self.size = size
        self.pictures: list[Image.Image] = []
        self.unplugged = False
        self.closed = 0

    def write(self, picture: Image.Image) -> None:
        if self.unplugged:
            raise OSError(19, "No such device")
        self.pictures.append(picture)

    def close(self) -> None:
        self.closed += 1


class SlowSink(MemorySink):
    """A display that takes `delay_s` per view (a slow serial line)."""

    def __init__(self, delay_s: float) -> None:
        super().__init__("slow")
        self.delay_s = delay_s

    def show(self, view: CustomerView, camera: Image.Image | None = None) -> None:
        time.sleep(self.delay_s)
        super().show(view, camera)


def test_a_screen_shows_the_view_at_its_own_size() -> None:
    fb = FakeFramebuffer((1024, 600))
    sink = FramebufferSink("kms:fake", lambda: fb)
    view = preview_view("paid")
    sink.show(view)
    [picture] = fb.pictures
    assert ImageChops.difference(picture, draw_view(view, (1024, 600))).getbbox() is None


def test_a_screen_that_fails_is_opened_again() -> None:
    screens = [FakeFramebuffer(), FakeFramebuffer()]
    opened: list[FakeFramebuffer] = []

    def open_next() -> FakeFramebuffer:
        opened.append(screens[len(opened)])
        return opened[-1]

    sink = FramebufferSink("kms:fake", open_next)
    screens[0].unplugged = True
    with pytest.raises(DisplayTrouble) as trouble:
        sink.show(preview_view("pay"))
    assert trouble.value.said.key == "display.write" and screens[0].closed == 1
    sink.show(preview_view("pay"))
    assert len(opened) == 2 and len(screens[1].pictures) == 1


def test_show_never_waits_and_the_newest_view_wins() -> None:
    sink = SlowSink(0.05)
    display = CustomerDisplay(sink)
    display.start()
    try:
        views = [preview_view("pay", amount=100 + i) for i in range(30)]
        started = time.perf_counter()
        for view in views:
            display.show(view)
        assert time.perf_counter() - started < 0.05  # 30 views queued in less than one show
        until(lambda: bool(sink.views) and sink.views[-1] == views[-1] and not display.waiting)
        assert len(sink.views) < len(views) and display.coalesced > 0
        amounts = [v.amount_mnt or 0 for v in sink.views]
        assert amounts == sorted(amounts)  # never an older view after a newer one
    finally:
        display.stop(farewell=False)


def test_a_bug_in_a_display_does_not_stop_the_worker() -> None:
    class Flaky(MemorySink):
        calls = 0

        def show(self, view: CustomerView, camera: Image.Image | None = None) -> None:
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("a bug in the display's driver")
            super().show(view, camera)

    sink = Flaky()
    display = CustomerDisplay(sink, retry_s=0.01)
    display.start()
    try:
        display.show(preview_view("pay"))
        until(lambda: sink.calls == 1)
        display.show(preview_view("paid"))
        until(lambda: [v.kind for v in sink.views][-1:] == ["paid"])  # "pay" retried or not
        assert display.state == "ready"
    finally:
        display.stop(farewell=False)


def test_a_dead_worker_is_started_again_by_the_next_view() -> None:
    sink = MemorySink()
    display = CustomerDisplay(sink)
    display.start()
    display._stop.set()  # the thread ends as if it had died
    display._wake.set()
    assert display._thread is not None
    display._thread.join(2)
    display._stop.clear()
    display.show(preview_view("paid"))
    until(lambda: [v.kind for v in sink.views] == ["paid"])
    display.stop(farewell=False)


def test_the_camera_is_redrawn_only_while_the_view_asks_for_it() -> None:
    fb = FakeFramebuffer((400, 240))
    frames = iter(range(10**6))
    lock = threading.Lock()

    def camera() -> Image.Image:
        with lock:
            return Image.new("L", (64, 48), next(frames) % 256)

    display = CustomerDisplay(FramebufferSink("kms:fake", lambda: fb), camera=camera)
    display.camera_every_s = 0.01
    display.start()
    try:
        display.show(preview_view("pay"))
        until(lambda: len(fb.pictures) >= 5)  # the live view moves on by itself
        assert fb.pictures[0].getpixel((20, 120)) != fb.pictures[4].getpixel((20, 120))
        display.show(preview_view("paid"))
        until(lambda: display.current is not None and display.current.kind == "paid")
        time.sleep(0.1)
        settled = len(fb.pictures)
        time.sleep(0.1)
        assert len(fb.pictures) == settled  # no camera on "paid": nothing redrawn
    finally:
        display.stop(farewell=False)


def test_kms_without_pykms_says_how_to_get_it() -> None:
    pytest.importorskip("PIL")
    try:
        import pykms  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - a Pi with python3-picamera2
        pytest.skip("pykms is installed here")
    with pytest.raises(DisplayTrouble) as trouble:
        KmsFramebuffer("HDMI-A-2")
    assert trouble.value.said.key == "display.no_kms"


@pytest.mark.parametrize(
    ("device", "kind", "target", "baud"),
    [
        ("off", "off", "", 9600),
        ("kms:HDMI-A-2", "kms", "HDMI-A-2", 9600),
        ("vfd:/dev/ttyUSB0@19200", "vfd", "/dev/ttyUSB0", 19200),
        ("vfd: /dev/ttyUSB0 @19200", "vfd", "/dev/ttyUSB0", 19200),
        ("kms: HDMI-A-2", "kms", "HDMI-A-2", 9600),
        ("vfd:/dev/serial/by-id/usb-pole", "vfd", "/dev/serial/by-id/usb-pole", 9600),
        # a by-id name with an "@" in it keeps it: the baud follows the last one
        ("vfd:/dev/serial/by-id/usb-a@b@19200", "vfd", "/dev/serial/by-id/usb-a@b", 19200),
        ("vfd:/dev/ttyS0", "vfd", "/dev/ttyS0", 9600),
    ],
)
def test_the_device_setting(device: str, kind: str, target: str, baud: int) -> None:
    settings = display_settings({"device": device})
    assert (settings.kind, settings.target, settings.baud) == (kind, target, baud)
    sink = open_display(settings)
    if kind == "off":
        assert sink is None
    elif kind == "vfd":
        assert isinstance(sink, PoleSink) and sink.device == target
    else:
        assert isinstance(sink, FramebufferSink) and sink.name == f"kms:{target}"


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"device": "hdmi"}, "display.setting_device"),
        ({"device": "vfd:"}, "display.setting_device"),
        ({"device": "vfd:/dev/ttyUSB0@fast"}, "display.setting_baud"),
        ({"device": "vfd:/dev/ttyUSB0@0"}, "display.setting_baud_range"),
        ({"device": "vfd:/dev/ttyUSB0@49"}, "display.setting_baud_range"),
        ({"device": "vfd:/dev/ttyUSB0@4000001"}, "display.setting_baud_range"),
        ({"device": "vfd:/dev/ttyUSB0@99999999999999999999"}, "display.setting_baud_range"),
        ({"device": "vfd:/dev/ttyUSB0", "protocol": "star"}, "display.setting_protocol"),
        ({"device": "vfd:/dev/ttyUSB0", "codepage": "cp1251"}, "display.setting_codepage"),
        ({"device": "vfd:/dev/ttyUSB0", "udc": "false"}, "display.setting_udc"),
        ({"device": "vfd:/dev/ttyUSB0", "udc": 0}, "display.setting_udc"),
        # the till's own console: the pole frames would be written over the cashier's screen
        ({"device": "vfd:/dev/tty1"}, "display.setting_console"),
        ({"device": "vfd:/dev/tty@9600"}, "display.setting_console"),
        ({"device": "vfd:/dev/console"}, "display.setting_console"),
    ],
)
def test_a_setting_that_names_no_display(table: dict[str, object], key: str) -> None:
    with pytest.raises(DisplaySettingError) as error:
        display_settings(table)
    assert error.value.said is not None and error.value.said.key == key


def test_cd5220_takes_no_user_defined_characters_by_default() -> None:
    assert not display_settings({"protocol": "cd5220"}).model.uses_udc
    assert display_settings({"protocol": "escpos"}).model.uses_udc


def test_a_baud_rate_too_large_for_the_kernel_is_a_setting_not_a_traceback() -> None:
    """An installer's typo (a baud of 20 digits) was taken by the settings, and pyserial's
    OverflowError escaped `PoleSink.write`: `qrpos display test` and `qrpos doctor` ended in
    a traceback, and the kiosk logged one for every view while its status bar said the
    display was ready. The setting is refused now, and the sink says trouble whatever baud
    it is handed."""
    import os
    import pty

    with pytest.raises(DisplaySettingError):
        display_settings({"device": "vfd:/dev/ttyUSB0@4294967296"})
    primary, secondary = pty.openpty()
    try:
        for baud in (4_294_967_296, 10**20):
            with pytest.raises(DisplayTrouble) as trouble:
                PoleSink(os.ttyname(secondary), baud).write(b"x")
            assert trouble.value.said.key == "display.open"
    finally:
        os.close(primary)
        os.close(secondary)


def test_an_empty_camera_frame_does_not_keep_the_last_sale_on_the_screen() -> None:
    """A camera frame of no pixels (0×0: a camera that hands over an empty buffer) made the
    picture divide by zero; the worker logged it and dropped the view, so the screen kept
    the last sale's "paid" while the next sale asked to pay. An empty frame is no camera
    view now: the amount is drawn without it."""
    fb = FakeFramebuffer((400, 240))
    display = CustomerDisplay(
        FramebufferSink("kms:fake", lambda: fb), camera=lambda: Image.new("L", (0, 0))
    )
    display.start()
    try:
        display.show(preview_view("paid", amount=100))
        until(lambda: display.current is not None and display.current.kind == "paid")
        display.show(preview_view("pay", amount=200))
        until(lambda: display.current is not None and display.current.kind == "pay", 2.0)
        assert display.current is not None and display.current.amount_mnt == 200
        assert display.state == "ready"
    finally:
        display.stop(farewell=False)


def test_a_screen_that_cannot_be_opened_or_drawn_is_in_trouble_and_its_view_waits() -> None:
    """An OSError while the screen was opened (KmsFramebuffer maps its buffer outside the
    words it says trouble in) or put up by `show_picture` (`qrpos display test`) escaped as
    itself: the worker logged a traceback and dropped the view, the status bar said
    "ready", and `qrpos display test` ended in a traceback. Both are `DisplayTrouble` now,
    and the view waits for the screen."""
    fb = FakeFramebuffer((400, 240))
    failures = [OSError(12, "Cannot allocate memory")]

    def open_screen() -> FakeFramebuffer:
        if failures:
            raise failures.pop()
        return fb

    sink = FramebufferSink("kms:fake", open_screen)
    display = CustomerDisplay(sink, retry_s=0.01)
    states: list[str] = []
    display.on_state = lambda state, why: states.append(state)
    display.start()
    try:
        display.show(preview_view("pay", amount=300))
        until(lambda: display.current is not None and display.current.kind == "pay")
        assert states == ["attention", "ready"] and len(fb.pictures) == 1
    finally:
        display.stop(farewell=False)
    fb.unplugged = True
    with pytest.raises(DisplayTrouble) as trouble:
        sink.show_picture(lambda size: Image.new("RGB", size))
    assert trouble.value.said.key == "display.write"

    def no_font(size: tuple[int, int]) -> Image.Image:
        raise OSError("cannot open resource")  # Pillow's words for a font file gone

    fb.unplugged = False
    with pytest.raises(DisplayTrouble):
        sink.show_picture(no_font)


def test_a_view_a_display_failed_on_is_tried_again() -> None:
    """Any failure of a sink but `DisplayTrouble` (a bug, an odd frame) dropped the view it
    was showing: with nothing newer, the display kept the previous sale's view (its
    "paid") for as long as the till sent nothing else, and the status bar said "ready".
    The view waits now, the display is in trouble meanwhile, and the traceback is logged
    once, not at every retry."""

    class OnceBroken(MemorySink):
        calls = 0

        def show(self, view: CustomerView, camera: Image.Image | None = None) -> None:
            self.calls += 1
            if self.calls == 2:
                raise RuntimeError("a bug in the display's driver")
            super().show(view, camera)

    sink = OnceBroken()
    display = CustomerDisplay(sink, retry_s=0.01)
    display.start()
    try:
        display.show(preview_view("paid", amount=100))
        until(lambda: sink.calls == 1)
        display.show(preview_view("pay", amount=200))
        until(lambda: sink.calls == 2)
        until(lambda: [v.kind for v in sink.views] == ["paid", "pay"], 1.0)
        assert display.state == "ready"
    finally:
        display.stop(farewell=False)


def test_a_display_that_always_fails_logs_one_traceback(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(MemorySink):
        calls = 0

        def show(self, view: CustomerView, camera: Image.Image | None = None) -> None:
            self.calls += 1
            raise RuntimeError("a bug in the display's driver")

    sink = Broken()
    display = CustomerDisplay(sink, retry_s=0.005)
    display.start()
    try:
        display.show(preview_view("pay"))
        until(lambda: sink.calls >= 20)
        assert display.state == "attention" and display.trouble is not None
        assert "RuntimeError" in display.trouble.english
    finally:
        display.stop(farewell=False)
    failed = [r for r in caplog.records if r.getMessage() == "customer display failed"]
    assert len(failed) == 1
