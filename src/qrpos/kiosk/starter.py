"""A `ServicesStarter` over a context manager such as `demo_world` or `production_services`.

The app calls `open` in a thread worker once its first screen is drawn; the command that
started the kiosk calls `close` after the app has exited. Imports no Textual.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from qrpos.tui.services import KioskServices
from qrpos.tui.startup import StepCallback


class ContextStarter:
    """`open` enters the factory's context, `close` leaves it."""

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
