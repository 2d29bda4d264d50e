"""The scan loop: one token per arming, repeats ignored, two cards refused, clean stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from qrpos.scanner import (
    CameraUnavailable,
    Frame,
    PiCameraSource,
    RefusalCode,
    ScanEvent,
    ScanLoop,
    ScanRefused,
    ScanStats,
    TokenRead,
    VirtualPhone,
    ZxingDecoder,
    make_decoder,
)
from qrpos.scanner.pixels import PREVIEW_SHADES
from qrpos.scanner.synthetic import Scene, render_grey

TOKEN = "vqr_loop TEST+/=%~ "


class Events:
    """Collects events from the worker threads and waits for them."""

    def __init__(self) -> None:
        self.items: list[ScanEvent] = []
        self._cond = threading.Condition()

    def __call__(self, event: ScanEvent) -> None:
        with self._cond:
            self.items.append(event)
            self._cond.notify_all()

    def of(self, kind: type) -> list[ScanEvent]:
        with self._cond:
            return [e for e in self.items if isinstance(e, kind)]

    def wait_for(self, pred: Callable[[], bool], timeout: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(pred, timeout)


class ScriptedSource:
    """A frame source whose current frame the test sets (a seam we own)."""

    name = "scripted"

    def __init__(self, frame: Frame) -> None:
        self.frame = frame
        self.opened = False
        self.closed = False
        self.reads = 0

    def open(self) -> None:
        self.opened = True

    def read(self) -> Frame | None:
        time.sleep(0.01)
        self.reads += 1
        return self.frame

    def close(self) -> None:
        self.closed = True


def _frame(*payloads: bytes) -> Frame:
    return render_grey(
        Scene(payloads=list(payloads), qr_fraction=0.4 if len(payloads) > 1 else 0.5)
    )


@pytest.fixture
def empty_frame() -> Frame:
    return _frame()


def test_armed_loop_hands_over_one_token_exactly_once_from_the_virtual_phone() -> None:
    phone = VirtualPhone(fps=30)
    events = Events()
    loop = ScanLoop(phone, make_decoder(), events, stats_interval_s=0.1)
    loop.start()
    try:
        phone.present(TOKEN)
        loop.arm()
        assert events.wait_for(lambda: bool(events.of(TokenRead)))
        # the phone stays in view for many more frames: still exactly one hand-over
        reads_then = len(events.of(ScanStats))
        assert events.wait_for(lambda: len(events.of(ScanStats)) >= reads_then + 3)
        assert events.of(TokenRead) == [TokenRead(TOKEN)]
        assert not loop.armed
    finally:
        loop.stop()
    assert events.of(ScanRefused) == []


def test_same_token_is_ignored_after_rearming_until_it_leaves_the_view(empty_frame: Frame) -> None:
    clock = [0.0]
    events = Events()
    loop = ScanLoop(ScriptedSource(empty_frame), make_decoder(), events, clock=lambda: clock[0])
    raw = TOKEN.encode()
    loop.arm()
    loop.handle_codes([raw])
    loop.arm()
    clock[0] = 0.1
    loop.handle_codes([raw])  # still the same phone: not a new sale's card
    assert events.of(TokenRead) == [TokenRead(TOKEN)]
    clock[0] = 0.2
    loop.handle_codes([])
    clock[0] = 2.0
    loop.handle_codes([])  # gone for longer than gone_after_s
    loop.handle_codes([raw])
    assert events.of(TokenRead) == [TokenRead(TOKEN), TokenRead(TOKEN)]


def test_allow_repeat_hands_over_the_same_token_again(empty_frame: Frame) -> None:
    events = Events()
    loop = ScanLoop(ScriptedSource(empty_frame), make_decoder(), events)
    loop.arm()
    loop.handle_codes([b"vqr_a"])
    loop.arm(allow_repeat=True)
    loop.handle_codes([b"vqr_a"])
    assert events.of(TokenRead) == [TokenRead("vqr_a"), TokenRead("vqr_a")]


def test_disarmed_loop_hands_over_nothing(empty_frame: Frame) -> None:
    events = Events()
    loop = ScanLoop(ScriptedSource(empty_frame), make_decoder(), events)
    loop.handle_codes([b"vqr_a"])
    loop.arm()
    loop.disarm()
    loop.handle_codes([b"vqr_a"])
    assert events.items == []


def test_a_disarmed_loop_reads_each_frame_once_and_resamples_nothing() -> None:
    """While a charge is sent the loop only watches whether the card is still in view:
    the engine's plain read, never the further passes or the resampling of a code it
    found but could not decode (they cost a frame's budget the charge may need)."""
    calls: list[str] = []

    class Recording(ZxingDecoder):
        def read(self, frame: Frame) -> list[bytes]:
            calls.append("read")
            return super().read(frame)

        def scan(self, frame: Frame) -> list[bytes]:
            calls.append("scan")
            return super().scan(frame)

    events = Events()
    loop = ScanLoop(ScriptedSource(_frame(b"vqr_shown")), Recording(), events)
    loop.start()
    try:
        deadline = time.monotonic() + 10.0
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        loop.stop()
    assert len(calls) >= 3 and set(calls) == {"read"}
    assert events.of(TokenRead) == []


def test_two_different_tokens_in_one_frame_are_refused_and_stay_armed() -> None:
    events = Events()
    loop = ScanLoop(ScriptedSource(_frame(b"vqr_one", b"vqr_two")), make_decoder(), events)
    loop.start()
    try:
        loop.arm()
        assert events.wait_for(lambda: bool(events.of(ScanRefused)))
        assert loop.armed
    finally:
        loop.stop()
    refused = events.of(ScanRefused)
    assert isinstance(refused[0], ScanRefused)
    assert refused[0].code is RefusalCode.SEVERAL_CARDS
    assert "show one" in refused[0].reason
    assert events.of(TokenRead) == []
    # said once while the same two codes stay in view, not at every frame
    assert len(refused) == 1


def test_a_url_qr_is_refused_once_and_a_token_after_it_is_handed_over(empty_frame: Frame) -> None:
    events = Events()
    loop = ScanLoop(ScriptedSource(empty_frame), make_decoder(), events)
    loop.arm()
    for _ in range(5):
        loop.handle_codes([b"https://example.mn/pay"])
    loop.handle_codes([b"vqr_after"])
    assert [type(e) for e in events.items] == [ScanRefused, TokenRead]
    assert events.items[1] == TokenRead("vqr_after")


def test_stop_joins_the_threads_and_releases_the_source() -> None:
    source = ScriptedSource(_frame(b"vqr_x"))
    events = Events()
    loop = ScanLoop(source, make_decoder(), events, stats_interval_s=0.05)
    before = set(threading.enumerate())
    loop.start()
    assert events.wait_for(lambda: bool(events.of(ScanStats)))
    started = [t for t in set(threading.enumerate()) - before if t.name.startswith("qrpos-")]
    assert started, "the loop runs its capture and decode on threads of its own"
    loop.stop()
    assert source.closed
    # only this loop's threads: other tests may leave a session-wide sandbox thread running
    assert not [t for t in started if t.is_alive()]
    assert loop.stats.camera_state == "stopped"
    reads = source.reads
    time.sleep(0.05)
    assert source.reads == reads


def test_live_stats_report_frame_rate_and_decode_time() -> None:
    events = Events()
    loop = ScanLoop(ScriptedSource(_frame(b"vqr_x")), make_decoder(), events, stats_interval_s=0.1)
    loop.start()
    try:
        assert events.wait_for(
            lambda: any(
                isinstance(e, ScanStats) and e.fps > 0 and e.decode_ms > 0 for e in events.items
            )
        )
    finally:
        loop.stop()
    stats = [e for e in events.of(ScanStats) if isinstance(e, ScanStats) and e.fps > 0]
    assert stats[-1].camera_state == "running"
    assert stats[-1].last_error is None


def test_unavailable_camera_is_reported_as_stats_not_raised() -> None:
    def no_camera() -> object:
        raise CameraUnavailable("no Pi camera found: check the ribbon cable")

    events = Events()
    loop = ScanLoop(PiCameraSource(camera_factory=no_camera), make_decoder(), events)
    loop.start()
    loop.stop()
    first = events.items[0]
    assert isinstance(first, ScanStats)
    assert first.camera_state == "unavailable"
    assert first.last_error is not None and "ribbon cable" in first.last_error


def test_preview_draws_the_latest_frame_in_block_characters() -> None:
    events = Events()
    loop = ScanLoop(ScriptedSource(_frame(b"vqr_x")), make_decoder(), events, stats_interval_s=0.05)
    assert loop.preview(10, 4) == [" " * 10] * 4  # nothing captured yet
    loop.start()
    try:
        assert events.wait_for(lambda: loop.latest_frame() is not None)
        rows = loop.preview(40, 12)
    finally:
        loop.stop()
    assert len(rows) == 12 and all(len(r) == 40 for r in rows)
    drawn = set("".join(rows))
    assert drawn <= set(PREVIEW_SHADES)
    # the QR's black modules and the white screen both show
    assert PREVIEW_SHADES[0] in drawn and PREVIEW_SHADES[-1] in drawn


class SlowDecoder:
    """A decoder whose cost grows with the frame, recording the sizes it is given."""

    name = "slow"

    def __init__(self) -> None:
        self.sides: list[int] = []

    def decode(self, frame: Frame) -> list[bytes]:
        self.sides.append(max(frame.shape))
        time.sleep(0.02 if max(frame.shape) > 600 else 0.0)
        return []


def test_frames_over_the_time_budget_are_shrunk_so_a_heavy_frame_cannot_stall_the_loop() -> None:
    decoder = SlowDecoder()
    events = Events()
    big = render_grey(Scene(width=1280, height=720))
    loop = ScanLoop(ScriptedSource(big), decoder, events, budget_ms=10.0, stats_interval_s=0.05)
    loop.start()
    try:
        assert events.wait_for(lambda: len(decoder.sides) >= 8 and decoder.sides[-1] <= 600)
    finally:
        loop.stop()
    assert decoder.sides[0] == 1280
    assert loop.side_limit < 1280
    assert loop.stats.last_error is not None and "budget" in loop.stats.last_error
