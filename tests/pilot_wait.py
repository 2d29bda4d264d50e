"""Waiting for a Textual screen in a Pilot test: by a deadline in boot-time seconds, not by
a count of pauses. A count is 6 s on an idle machine and far less on a busy one (a pause of
0.02 s can take 0.2 s beside a PIN's scrypt); a deadline is the same on both."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

PATIENCE_S = 30.0


async def until(
    pilot: Any, check: Callable[[], bool], what: str = "the screen", timeout: float = PATIENCE_S
) -> None:
    """Pause the app until `check()` holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        await pilot.pause(0.02)
        if check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened in {timeout:.0f} s: {what}")
