"""The scan loop: capture thread, latest-frame slot, decode worker, one token per arming.

Capture runs on its own thread and only ever keeps the newest frame, so a slow decode
drops frames instead of queueing them (the token on screen is always current). The
decode worker takes the newest frame, applies the token rules and, when armed, hands
over exactly one token, once. Events are called from these worker threads; a UI must
marshal them onto its own thread.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

from qrpos.redact import token_tail
from qrpos.scanner.decoders import Decoder
from qrpos.scanner.events import ScanEvent, ScanRefused, ScanStats, TokenRead
from qrpos.scanner.frames import CameraUnavailable, Frame, FrameSource
from qrpos.scanner.pixels import (
    area_mean,
    release_free_memory,
    render_preview,
)
from qrpos.scanner.tokens import Refusal, RefusalCode, ScannedToken, classify, refusal

log = logging.getLogger(__name__)

#: the time budget never shrinks frames below this longest side (a close phone stays readable)
MIN_SIDE = 480
#: how often Python threads hand the GIL over (default 5 ms): the token read on the decode
#: thread, the UI loop and the outbox's SQLite thread pass it back and forth several times
#: on the way to the wire, and at 5 ms a hop that alone can cost a frame (scan_to_send.py)
GIL_SWITCH_INTERVAL_S = 0.001


#: a camera that could not be opened is tried again this often (the kiosk stays up, its
#: screen says the camera needs attention; systemd never restarts it for a missing camera)
CAMERA_RETRY_S = 5.0
#: this many failed reads in a row (about 15 s) and the camera is closed and opened again
#: (a USB webcam unplugged and plugged back needs a new handle)
REOPEN_AFTER_FAILURES = 10


#: a code has left the view once this many decoded frames in a row showed none (and
#: `gone_after_s` passed): a decoder starved of CPU has not seen it leave
GONE_FRAMES = 3
#: how many spent tokens the loop remembers (a phone that has not refreshed is the last
#: sale's; a few more cover a queue of customers re-showing old passes)
SPENT_KEPT = 32


class ScanLoop:
    """Reads frames from `source`, decodes them with `decoder`, reports to `on_event`."""

    def __init__(
        self,
        source: FrameSource,
        decoder: Decoder,
        on_event: Callable[[ScanEvent], None],
        *,
        max_side: int = 1280,
        budget_ms: float = 25.0,
        stats_interval_s: float = 0.5,
        gone_after_s: float = 0.8,
        clock: Callable[[], float] = time.monotonic,
        retry_s: float = CAMERA_RETRY_S,
        reopen_after: int = REOPEN_AFTER_FAILURES,
    ) -> None:
        self.source = source
        self._retry_s = retry_s
        self._reopen_after = reopen_after
        self.decoder = decoder
        self._on_event = on_event
        # the per-frame budget: frames are shrunk to at most max_side before decoding, and
        # further (down to MIN_SIDE) while decoding one takes longer than budget_ms
        self._max_side = max_side
        self._side_limit = max_side
        self._budget_ms = budget_ms
        self._stats_interval_s = stats_interval_s
        self._gone_after_s = gone_after_s
        self._clock = clock
        self._cond = threading.Condition()
        self._latest: Frame | None = None
        self._seq = 0
        self._stop = threading.Event()
        self._armed = False
        self._threads: list[threading.Thread] = []
        self._state_lock = threading.Lock()
        # the last handed-over token and what was last refused, with when each was last seen
        self._handed: tuple[str, float] | None = None
        self._refused: tuple[frozenset[bytes], float] | None = None
        # a wallet code continuously in view: (since, last seen); and when the last sale
        # ended: a code in view since before then is not handed over unless accepted
        self._in_view: tuple[float, float] | None = None
        self._sale_ended_at: float | None = None
        # tokens that paid for a sale: retired by the service (spec: "each token is retired
        # by the first successful charge"), never handed over again, however a sale arms
        self._spent: deque[str] = deque(maxlen=SPENT_KEPT)
        # the token handed over for the sale under way (however long it has been gone)
        self._sale_token: str | None = None
        # decoded frames in a row without a wallet code: a starved decoder is not "gone"
        self._absent_frames = 0
        self._fps = 0.0
        self._decode_ms = 0.0
        self._last_error: str | None = None
        self._camera_state = "stopped"
        # the last open raised something else than CameraUnavailable (logged in full once)
        self._open_failing = False

    # --- control ------------------------------------------------------------------------
    def start(self) -> None:
        """Open the source and start the capture and decode threads.

        A camera that cannot be opened is reported as a `ScanStats` with camera_state
        "unavailable" and the fix in `last_error`, and tried again every `retry_s`
        seconds until it opens (or `stop()`); `start()` itself does not raise.
        Lowers the process's GIL switch interval to `GIL_SWITCH_INTERVAL_S` (see there).
        """
        if self._threads:
            return
        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL_S))
        self._stop.clear()
        self._set_state("starting")
        if self._open():
            self._start_threads()
        else:
            opener = threading.Thread(target=self._open_later, name="qrpos-camera", daemon=True)
            self._threads = [opener]
            opener.start()

    def _open(self) -> bool:
        """Open the camera; False (stats say "unavailable", with the fix) when it cannot."""
        try:
            self.source.open()
        except CameraUnavailable as exc:
            self._last_error = str(exc)
        except Exception as exc:
            # a driver's or a file's own error (or one of ours): the camera is counted
            # unavailable and tried again, as a missing one is, never the end of the thread
            # that opens it; the traceback goes to the log (a bug is not hidden), once a
            # run of failed opens (tried every few seconds), the rest in a line each
            self._last_error = f"camera open failed: {type(exc).__name__}: {exc}"
            log.warning("%s", self._last_error, exc_info=not self._open_failing)
            self._open_failing = True
        else:
            self._open_failing = False
            return True
        self._set_state("unavailable")
        self._emit(self.stats)
        return False

    def _open_later(self) -> None:
        """Try the camera again every `retry_s` until it opens, then start reading it."""
        while not self._stop.wait(self._retry_s):
            if self._open():
                if self._stop.is_set():
                    return  # stopped while it opened: stop() closes it
                log.info("camera opened after being unavailable")
                self._last_error = None
                self._start_threads()
                return

    def _start_threads(self) -> None:
        threads = [
            threading.Thread(target=self._capture, name="qrpos-capture", daemon=True),
            threading.Thread(target=self._decode_worker, name="qrpos-decode", daemon=True),
        ]
        self._threads = [*self._threads, *threads]
        for t in threads:
            t.start()

    def arm(self, *, allow_repeat: bool = False) -> None:
        """Hand over the next token read. The token handed over last is skipped while it
        stays in view, unless `allow_repeat` (a new sale should not reuse a spent card)."""
        with self._state_lock:
            if allow_repeat:
                self._handed = None
            self._refused = None
            self._armed = True

    def mark_sale_ended(self, *, charged: bool = False) -> None:
        """A sale's result is on screen: a card still in view from now on (the customer's
        phone, showing its refreshed pass) must leave the view or be accepted before the
        next sale may charge it. `charged`: the sale was charged (on proof), so the token
        handed over for it is spent and is refused from now on, even when the next sale
        arms with `allow_repeat` (a phone whose pass has not refreshed yet)."""
        with self._state_lock:
            self._sale_ended_at = self._clock()
            if charged and self._sale_token is not None:
                self._spent.append(self._sale_token)
            self._sale_token = None

    def accept_held(self) -> None:
        """The cashier confirmed on screen: the card in view may be handed over."""
        with self._state_lock:
            self._sale_ended_at = None
            self._refused = None

    def disarm(self) -> None:
        """Stop handing over tokens (the frames keep flowing for the preview)."""
        with self._state_lock:
            self._armed = False

    @property
    def armed(self) -> bool:
        """True while the loop will hand over the next token it reads."""
        return self._armed

    def stop(self) -> None:
        """Stop both threads, wait for them and release the camera."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for t in list(self._threads):
            if t is not threading.current_thread():
                t.join(timeout=5.0)
        self._threads = []
        try:
            self.source.close()
        finally:
            self._set_state("stopped")

    @property
    def stats(self) -> ScanStats:
        """The current figures."""
        return ScanStats(self._fps, self._decode_ms, self._last_error, self._camera_state)

    def latest_frame(self) -> Frame | None:
        """The newest frame captured, if any."""
        with self._cond:
            return self._latest

    def preview(self, cols: int, rows: int) -> list[str]:
        """The latest frame as `rows` strings of `cols` shading characters, for aiming."""
        frame = self.latest_frame()
        if frame is None or cols <= 0 or rows <= 0:
            return [" " * max(cols, 0) for _ in range(max(rows, 0))]
        return render_preview(frame, cols, rows)

    # --- threads ----------------------------------------------------------------------
    def _capture(self) -> None:
        window_start = self._clock()
        frames = 0
        last_stats = window_start
        failures = 0
        while not self._stop.is_set():
            try:
                frame = self.source.read()
            except Exception as exc:
                failures += 1
                self._last_error = f"camera read failed: {type(exc).__name__}: {exc}"
                self._set_state("error")
                # the first failure of a run with its traceback (a bug in a driver or in
                # ours shows where), the rest in a line each
                log.warning("%s", self._last_error, exc_info=failures == 1)
                self._stop.wait(min(2.0, 0.05 * 2**failures))
                frame = None
                if failures >= self._reopen_after:
                    failures = 0 if self._reopen() else failures
            else:
                failures = 0
            now = self._clock()
            if frame is not None:
                frames += 1
                with self._cond:
                    self._latest = frame
                    self._seq += 1
                    self._cond.notify_all()
                if self._camera_state != "running":
                    self._set_state("running")
            elif failures == 0:
                # nothing new yet (or a replay that ran out): do not spin
                self._stop.wait(0.01)
            if now - last_stats >= self._stats_interval_s:
                self._fps = frames / max(now - window_start, 1e-9)
                if frames == 0 and self._camera_state == "running":
                    self._set_state("no_frames")
                frames, window_start, last_stats = 0, now, now
                self._emit(self.stats)

    def _reopen(self) -> bool:
        """Close the camera and open it again (a USB camera unplugged and back); until it
        opens, wait `retry_s` between tries. True once it is open again."""
        with contextlib.suppress(Exception):
            self.source.close()
        while not self._stop.is_set():
            if self._open():
                log.info("camera opened again after failed reads")
                return True
            self._stop.wait(self._retry_s)
        return False

    def _decode_worker(self) -> None:
        seen = 0
        while not self._stop.is_set():
            with self._cond:
                if self._seq == seen:
                    self._cond.wait(0.5)
                if self._stop.is_set():
                    return
                if self._seq == seen or self._latest is None:
                    continue
                frame, seen = self._latest, self._seq
            started = time.perf_counter()
            # disarmed, frames only tell whether the last card is still in view: one plain
            # pass is enough (zxing's `read`: not even a found code resampled; zbar's one
            # `scan`), and the CPU stays free for the charge being sent
            decode = (
                self.decoder.decode
                if self._armed
                else getattr(self.decoder, "read", None) or getattr(self.decoder, "scan", None)
            )
            try:
                found = (decode or self.decoder.decode)(self._fit(frame))
            except Exception as exc:
                self._last_error = f"decoder failed: {type(exc).__name__}"
                log.warning("%s", self._last_error)
                continue
            self._decode_ms = (time.perf_counter() - started) * 1000.0
            # further passes keep to their own budget: frames shrink only for the plain one
            plan = getattr(self.decoder, "plan", None)
            self._keep_budget(getattr(plan, "plain_ms", None) or self._decode_ms)
            if len(getattr(plan, "last_passes", ())) > 1:
                release_free_memory()
            self.handle_codes(found)

    def _keep_budget(self, decode_ms: float) -> None:
        # a heavy frame must not stall the loop: shrink the next ones, grow back when cheap
        if decode_ms > self._budget_ms and self._side_limit > MIN_SIDE:
            self._side_limit = max(MIN_SIDE, int(self._side_limit * 0.75))
            self._last_error = (
                f"decoding took {decode_ms:.0f} ms (budget {self._budget_ms:.0f} ms): "
                f"frames shrunk to {self._side_limit} px"
            )
        elif decode_ms < self._budget_ms / 3 and self._side_limit < self._max_side:
            self._side_limit = min(self._max_side, int(self._side_limit / 0.75) + 1)

    @property
    def side_limit(self) -> int:
        """The longest frame side the decoder is currently given (the time budget's lever)."""
        return self._side_limit

    def _fit(self, frame: Frame) -> Frame:
        side = max(frame.shape)
        if side <= self._side_limit:
            return frame
        scale = self._side_limit / side
        h, w = frame.shape
        return area_mean(frame, max(1, round(w * scale)), max(1, round(h * scale)))

    def handle_codes(self, found: list[bytes]) -> None:
        """Apply the arming rules to the codes of one frame (the decode worker calls this)."""
        now = self._clock()
        distinct = frozenset(found)
        results = {raw: classify(raw) for raw in distinct}
        tokens = {r.token for r in results.values() if isinstance(r, ScannedToken)}
        event: ScanEvent | None = None
        with self._state_lock:
            if tokens:
                seen = self._in_view
                gone = seen is None or (
                    now - seen[1] > self._gone_after_s and self._absent_frames >= GONE_FRAMES
                )
                self._in_view = (now if gone or seen is None else seen[0], now)
                self._absent_frames = 0
            else:
                self._absent_frames += 1
            if self._handed and self._handed[0] in tokens:
                self._handed = (self._handed[0], now)
            elif self._handed and now - self._handed[1] > self._gone_after_s:
                self._handed = None
            if not self._armed or not distinct:
                return
            live = tokens.difference(self._spent)
            fresh = live - {self._handed[0]} if self._handed else live
            if len(tokens) > 1:
                event = self._refuse_once(distinct, now, refusal(RefusalCode.SEVERAL_CARDS))
            elif tokens and not live:
                event = self._refuse_once(distinct, now, refusal(RefusalCode.SPENT))
            elif fresh and self._held_since_last_sale():
                event = self._refuse_once(distinct, now, refusal(RefusalCode.HELD))
            elif fresh:
                token = next(iter(fresh))
                self._armed = False
                self._handed = (token, now)
                self._sale_token = token
                self._refused = None
                event = TokenRead(token)
            elif not tokens:
                first = next(r for r in results.values() if isinstance(r, Refusal))
                event = self._refuse_once(distinct, now, first)
        if event is not None:
            if isinstance(event, TokenRead):
                log.info("token read %s", token_tail(event.token))
            self._emit(event)

    def handle_scan(self, raw: bytes) -> None:
        """One code from a handheld scanner (`qrpos.scanner.handheld`): a trigger pull, not
        a frame. The camera's rules for what it holds apply (not a token, already paid, one
        token per arming); "left in view" does not: each scan is a new presentation. A
        scan while no sale waits for a code is ignored, as a phone shown to the camera
        then is."""
        now = self._clock()
        result = classify(raw)
        event: ScanEvent | None = None
        with self._state_lock:
            if not self._armed:
                log.info("handheld scan while no sale waits for a code: ignored")
                return
            if isinstance(result, Refusal):
                event = self._refuse_once(frozenset({raw}), now, result)
            elif result.token in self._spent:
                event = self._refuse_once(frozenset({raw}), now, refusal(RefusalCode.SPENT))
            else:
                self._armed = False
                self._handed = (result.token, now)
                self._sale_token = result.token
                self._refused = None
                event = TokenRead(result.token)
        if event is not None:
            if isinstance(event, TokenRead):
                log.info("token read by the handheld scanner %s", token_tail(event.token))
            self._emit(event)

    def _held_since_last_sale(self) -> bool:
        # a code in view since before the last sale ended: the last customer's phone
        ended = self._sale_ended_at
        return ended is not None and self._in_view is not None and self._in_view[0] <= ended

    def _refuse_once(self, codes: frozenset[bytes], now: float, why: Refusal) -> ScanEvent | None:
        # a refused code stays in view for many frames: say so once, not 30 times a second
        if self._refused and self._refused[0] == codes and now - self._refused[1] < 3.0:
            self._refused = (codes, self._refused[1])
            return None
        self._refused = (codes, now)
        return ScanRefused(why.reason, why.code)

    def _set_state(self, state: str) -> None:
        self._camera_state = state

    def _emit(self, event: ScanEvent) -> None:
        try:
            self._on_event(event)
        except Exception:
            log.exception("scan event handler failed")
