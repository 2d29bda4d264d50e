"""The customer display's port and the worker that feeds it.

A display is a `DisplaySink`: something that shows one `CustomerView` now (a pole display
over serial, a second screen through DRM/KMS, the demo's panel) or raises `DisplayTrouble`
saying why not. `CustomerDisplay` owns one sink and one thread:

- `show(view)` never waits: it leaves the view for the thread and returns. Views that
  arrive faster than the display takes them coalesce: the newest wins, the ones between
  are skipped (a customer needs the sale as it is now, not its history).
- A sink in trouble (unplugged, powered off, slow) holds up nothing but the thread: the
  newest view waits and is tried again every `retry_s`, so the display shows the sale as
  it is the moment it is back. `state` and `on_state` say "attention" with the reason, as
  the receipt printer's worker does.
- The thread is supervised: an unexpected error in a sink is logged (once, not at every
  retry), said as trouble, and its view waits like any other; a thread that died anyway is
  started again by the next `show`.
- A screen that shows the camera (`sink.live`) is redrawn with the newest frame while the
  view asks for it (the customer aims the phone by it).
- `stop` shows "display not connected to the till" (one try) before letting go.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from qrpos.errors import QrposError
from qrpos.present.customer import CustomerView, offline_view
from qrpos.said import Said, say

if TYPE_CHECKING:
    from PIL import Image

log = logging.getLogger("qrpos.display")

#: a display in trouble is tried again this often
RETRY_S = 1.0
#: the camera's view is redrawn this often on a screen (5 frames a second: a full-HD
#: redraw took ~120 ms on a loaded x86 core, more on a Pi; hardware.md)
CAMERA_EVERY_S = 0.2


class DisplayTrouble(QrposError):
    """The view was not shown; `said` says why (the newest view waits for the display)."""

    said: Said

    def __init__(self, said: Said) -> None:
        super().__init__(said)


def load_pykms() -> Any:
    """`pykms` (python3-picamera2's kmsxx binding), or `DisplayTrouble` saying how to get
    it: the second screen and `qrpos doctor` ask the same way."""
    try:
        import pykms  # type: ignore[import-not-found]  # python3-picamera2's kmsxx
    except ImportError:
        raise DisplayTrouble(
            say(
                "display.no_kms",
                "the screen library (pykms) is not installed: install python3-picamera2",
            )
        ) from None
    return pykms


class DisplaySink(Protocol):
    """One customer display."""

    #: shown in the journal, `qrpos doctor` and `qrpos display test`
    name: str
    #: the display shows the camera's live view (redrawn while a view asks for it)
    live: bool

    def show(self, view: CustomerView, camera: Image.Image | None = None) -> None:
        """Show `view` now (with the camera's picture where it asks for one), or raise
        `DisplayTrouble`."""
        ...

    def close(self) -> None:
        """Let the device go (safe to call more than once)."""
        ...


class CustomerDisplay:
    """The worker thread between the till and one display (see the module's docstring)."""

    def __init__(
        self,
        sink: DisplaySink,
        *,
        retry_s: float = RETRY_S,
        camera: Callable[[], Image.Image | None] | None = None,
        camera_every_s: float = CAMERA_EVERY_S,
        shop: str = "",
    ) -> None:
        self.sink = sink
        #: the shop's name on the idle screen (the catalogue's welcome when empty)
        self.shop = shop
        self.retry_s = retry_s
        self.camera = camera
        self.camera_every_s = camera_every_s
        #: "ready", or "attention" while the display is in trouble (`trouble` says why)
        self.state = "ready"
        self.trouble: Said | None = None
        #: called (from the worker thread) when `state` changes: the status bar listens
        self.on_state: Callable[[str, Said | None], None] = lambda state, why: None
        #: called (from the worker thread) after a view reached the display, with
        #: `time.perf_counter()` then (tests and the benchmark follow the display by it)
        self.on_shown: Callable[[CustomerView, float], None] = lambda view, at: None
        #: views shown, and views skipped because a newer one came first
        self.shown = 0
        self.coalesced = 0
        #: the view the display shows now (None: none yet)
        self.current: CustomerView | None = None
        self._pending: CustomerView | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the till's side (never blocks) ----------------------------------------------

    def show(self, view: CustomerView) -> None:
        """Show `view` as soon as the display takes it; a view still waiting is replaced."""
        with self._lock:
            if self._pending is not None:
                self.coalesced += 1
            self._pending = view
        self._wake.set()
        if self._thread is not None and not self._thread.is_alive() and not self._stop.is_set():
            log.error("customer display worker had stopped: started again")
            self.start()

    @property
    def waiting(self) -> bool:
        """A view is waiting for the display."""
        with self._lock:
            return self._pending is not None

    def start(self) -> None:
        """Start the worker thread."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="qrpos-display", daemon=True)
        self._thread.start()

    def stop(self, *, farewell: bool = True) -> None:
        """Stop the worker; with `farewell`, the display says it is not connected to the
        till (one try: a display in trouble is not waited for)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if farewell:
            try:
                self.sink.show(offline_view())
            except Exception as exc:  # the till is stopping: its display may be gone too
                log.info("customer display not told the till stopped: %s", exc)
        try:
            self.sink.close()
        except Exception:
            log.exception("customer display did not close")

    # --- the worker ------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                wait = self._step()
            except Exception:  # a bug in a sink or the drawing: said, and the loop goes on
                log.exception("customer display failed")
                wait = self.retry_s
            if self._stop.is_set():
                break
            self._wake.wait(wait)
            self._wake.clear()

    def _step(self) -> float | None:
        """Show what waits (or redraw the camera); how long to wait before the next step."""
        with self._lock:
            view, self._pending = self._pending, None
        refresh = view is None and self._camera_wanted()
        if view is None and not refresh:
            return None
        shown = view if view is not None else self.current
        assert shown is not None
        try:
            self.sink.show(shown, self._frame() if shown.camera else None)
        except DisplayTrouble as exc:
            self._keep(shown)
            self._set("attention", exc.said)
            return self.retry_s
        except Exception as exc:  # a bug in a sink or the drawing: said once, the view waits
            self._keep(shown)
            said = say(
                "display.write",
                "{device} stopped taking data ({why})",
                device=self.sink.name,
                why=Said.plain(f"{type(exc).__name__}: {exc}"),
            )
            if said != self.trouble:  # not a traceback every retry
                log.exception("customer display failed")
            self._set("attention", said)
            return self.retry_s
        at = time.perf_counter()
        self.current = shown
        self._set("ready", None)
        if view is not None:
            self.shown += 1
            try:
                self.on_shown(view, at)
            except Exception:
                log.exception("customer display listener failed")
        return self.camera_every_s if self._camera_wanted() else None

    def _keep(self, view: CustomerView) -> None:
        """`view` was not shown: it waits for the display, unless a newer one came."""
        with self._lock:
            if self._pending is None:
                self._pending = view

    def _camera_wanted(self) -> bool:
        return (
            self.camera is not None
            and self.sink.live
            and self.current is not None
            and self.current.camera
        )

    def _frame(self) -> Image.Image | None:
        if self.camera is None or not self.sink.live:
            return None
        try:
            return self.camera()
        except Exception:  # the camera's trouble is the scanner's to report
            log.debug("no camera frame for the customer display", exc_info=True)
            return None

    def _set(self, state: str, why: Said | None) -> None:
        if (state, why) == (self.state, self.trouble):
            return
        self.state, self.trouble = state, why
        if why is not None:
            log.warning("customer display needs attention: %s", why.english)
        else:
            log.info("customer display ready")
        try:
            self.on_state(state, why)
        except Exception:
            log.exception("customer display state listener failed")


class MemorySink:
    """A display that keeps what it was shown (the demo's panel, tests): never in trouble
    unless `unplugged`."""

    live = False

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.views: list[CustomerView] = []
        self.unplugged = False
        self.on_view: Callable[[CustomerView], None] = lambda view: None

    def show(self, view: CustomerView, camera: Image.Image | None = None) -> None:
        """Keep `view` (`DisplayTrouble` while unplugged)."""
        if self.unplugged:
            raise DisplayTrouble(Said.plain(f"{self.name} unplugged"))
        self.views.append(view)
        self.on_view(view)

    def close(self) -> None:
        """Nothing to let go."""
