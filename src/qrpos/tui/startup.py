"""Building the kiosk's services after its first screen is drawn.

Opening the outbox, the camera, the decoder (OpenCV), the HTTP client and, in the demo,
the embedded sandbox costs more than drawing the first screen. `KioskApp` is therefore
given a `ServicesStarter`: it draws the Amount screen, says in the status bar what is
still starting, and calls `open` in a thread worker. No sale can start before the
services are in and the start-up recovery is done. Importing this module imports
neither Textual nor any of the heavy parts.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Protocol

from qrpos.tui.services import KioskServices

#: what `open` reports as it goes: one of these keys (locale `startup.<key>`)
STEPS = ("service", "outbox", "camera")

StepCallback = Callable[[str], None]


class ServicesStarter(Protocol):
    """Builds the kiosk's services (blocking; the app calls it in a thread worker)."""

    def open(self, on_step: StepCallback) -> KioskServices:
        """Build everything; report each step's key (see `STEPS`) through `on_step`."""
        ...

    def close(self) -> None:
        """Stop what `open` started (waits for an `open` still running)."""
        ...


class ContextStarter:
    """A `ServicesStarter` over a context manager factory such as `demo_world` or
    `production_services`: `open` enters it, `close` leaves it."""

    def __init__(
        self, factory: Callable[[StepCallback], contextlib.AbstractContextManager[KioskServices]]
    ) -> None:
        self._factory = factory
        self._stack = contextlib.ExitStack()
        # held for the whole of `open`, so `close` never tears down a half-built world
        self._lock = threading.Lock()

    def open(self, on_step: StepCallback) -> KioskServices:
        """Enter the context; on failure, whatever was started is stopped again."""
        with self._lock:
            try:
                return self._stack.enter_context(self._factory(on_step))
            except BaseException:
                self._stack.close()
                raise

    def close(self) -> None:
        """Leave the context (idempotent)."""
        with self._lock:
            self._stack.close()
