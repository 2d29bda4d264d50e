"""Building the kiosk's services after its first screen is drawn.

Opening the outbox, the camera, the decoder (OpenCV), the HTTP client and, in the demo,
the embedded sandbox costs more than drawing the first screen. `KioskApp` is therefore
given a `ServicesStarter` (`qrpos.kiosk.starter.ContextStarter` in production): it draws
the Amount screen, says in the status bar what is still starting, and calls `open` in a
thread worker. No sale can start before the services are in and the start-up recovery
is done. Importing this module imports neither Textual nor any of the heavy parts.
"""

from __future__ import annotations

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
