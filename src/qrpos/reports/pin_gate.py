"""The manager PIN in front of a reversal, with a pause after repeated wrong PINs.

After `FREE_ATTEMPTS` wrong PINs in a row the gate closes for `PAUSE_S` seconds, and
each further wrong PIN doubles the pause (up to `MAX_PAUSE_S`). The count and the pause
are kept in the state dir, so restarting the kiosk does not reset them. The PIN itself
is checked by `qrpos.manager_pin` (salted scrypt) and never stored or logged here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from qrpos import manager_pin

THROTTLE_FILE = "manager-pin.throttle"
FREE_ATTEMPTS = 3
PAUSE_S = 30.0
MAX_PAUSE_S = 900.0


@dataclass(frozen=True)
class PinCheck:
    """`ok`; `wrong` with `attempts_left` before a pause; `locked` for `wait_s`;
    `no_pin` when none was ever set."""

    result: Literal["ok", "wrong", "locked", "no_pin"]
    attempts_left: int = 0
    wait_s: float = 0.0


class PinGate:
    """Checks the manager PIN; slow (scrypt), so call it off the UI's event loop."""

    def __init__(self, state_dir: Path, clock: Callable[[], float] = time.time) -> None:
        self.state_dir = state_dir
        self.clock = clock
        self._path = state_dir / THROTTLE_FILE

    def _load(self) -> tuple[int, float]:
        try:
            data = json.loads(self._path.read_text(encoding="ascii"))
            return int(data["failures"]), float(data["until"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0, 0.0

    def _save(self, failures: int, until: float) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"failures": failures, "until": until}), encoding="ascii")
        tmp.replace(self._path)

    def wait_s(self) -> float:
        """Seconds until a PIN may be tried again (0 when it may be tried now)."""
        _failures, until = self._load()
        return max(0.0, until - self.clock())

    def check(self, pin: str) -> PinCheck:
        """Try a PIN. A locked gate does not even look at it."""
        if not manager_pin.has_pin(self.state_dir):
            return PinCheck("no_pin")
        failures, until = self._load()
        now = self.clock()
        if until > now:
            return PinCheck("locked", wait_s=until - now)
        if manager_pin.verify_pin(self.state_dir, pin):
            self._save(0, 0.0)
            return PinCheck("ok")
        failures += 1
        if failures >= FREE_ATTEMPTS:
            pause = min(MAX_PAUSE_S, PAUSE_S * 2.0 ** (failures - FREE_ATTEMPTS))
            self._save(failures, now + pause)
            return PinCheck("locked", wait_s=pause)
        self._save(failures, 0.0)
        return PinCheck("wrong", attempts_left=FREE_ATTEMPTS - failures)
