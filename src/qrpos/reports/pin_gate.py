"""The manager PIN in front of a reversal, with a pause after repeated wrong PINs.

After `FREE_ATTEMPTS` wrong PINs in a row the gate closes for `PAUSE_S` seconds, and
each further wrong PIN doubles the pause (up to `MAX_PAUSE_S`). The count and the pause
are kept in the state dir, so restarting the kiosk does not reset them. The PIN itself
is checked by `qrpos.manager_pin` (salted scrypt) and never stored or logged here.

The pause is counted in real seconds on the step-proof clock (`qrpos.boottime`): a Pi's
wall clock that NTP steps by hours neither opens the gate early nor keeps it shut for
hours. After a reboot that clock starts again, so the wall clock says what is left, but
never more than the pause itself (a Pi boots on an old saved time: the pause is then
served again in full, never for hours).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from qrpos import boottime, manager_pin
from qrpos.statedir import write_private

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


class Reading(NamedTuple):
    """One look at the clocks: this boot's id, its step-proof seconds, the wall clock."""

    boot: str | None
    up: float
    wall: float


def read_clocks() -> Reading:
    """The clocks now (`qrpos.boottime` and the wall clock)."""
    return Reading(boottime.BOOT_ID, boottime.uptime_s(), time.time())


@dataclass(frozen=True)
class _Pause:
    """Wrong PINs in a row and, when paused, its end on both clocks and its length."""

    failures: int = 0
    boot: str | None = None
    up_until: float = 0.0
    wall_until: float = 0.0
    length: float = 0.0

    def left(self, now: Reading) -> float:
        """Seconds of the pause still to serve at `now` (0 when not paused)."""
        if self.length <= 0:
            return 0.0
        if self.boot is not None and self.boot == now.boot:
            left = self.up_until - now.up
        else:  # another boot (or no boot id): the wall clock, bounded by the pause itself
            left = self.wall_until - now.wall
        return max(0.0, min(self.length, left))


class PinGate:
    """Checks the manager PIN; slow (scrypt), so call it off the UI's event loop."""

    def __init__(
        self,
        state_dir: Path,
        clock: Callable[[], Reading] = read_clocks,
        *,
        throttle_file: str = THROTTLE_FILE,
        verify: Callable[[str], bool] | None = None,
    ) -> None:
        """The manager PIN's gate; with `verify` (and a `throttle_file` of its own) the
        same pause in front of another PIN, a cashier's."""
        self.state_dir = state_dir
        self.clock = clock
        self._path = state_dir / throttle_file
        self._verify = verify

    def _load(self) -> _Pause:
        try:
            data = json.loads(self._path.read_text(encoding="ascii"))
            failures = int(data["failures"])
            if "length" not in data:  # written before the step-proof clock: no pause kept
                return _Pause(failures)
            boot = data["boot"]
            return _Pause(
                failures,
                boot if isinstance(boot, str) else None,
                float(data["up_until"]),
                float(data["wall_until"]),
                float(data["length"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return _Pause()

    def _save(self, pause: _Pause) -> None:
        """Durably (`write_private`: the bytes and the rename synced): a power cut must
        not hand a guesser fresh attempts by leaving an empty or an older file."""
        body = {
            "failures": pause.failures,
            "boot": pause.boot,
            "up_until": pause.up_until,
            "wall_until": pause.wall_until,
            "length": pause.length,
        }
        write_private(self.state_dir, self._path.name, json.dumps(body).encode("ascii"))

    def _current(self, now: Reading) -> tuple[_Pause, float]:
        """The stored pause and what is left of it at `now`. A pause of an earlier boot
        is moved onto this boot's clock the first time it is seen, so from then on it
        runs down in real seconds even while the wall clock is still wrong; a pause seen
        served is forgotten (a later step of the wall clock cannot bring it back)."""
        state = self._load()
        left = state.left(now)
        if state.length > 0 and left <= 0:
            state = _Pause(state.failures)
            self._save(state)
        elif left > 0 and state.boot != now.boot and now.boot is not None:
            state = _Pause(state.failures, now.boot, now.up + left, now.wall + left, left)
            self._save(state)
        return state, left

    @classmethod
    def for_cashier(cls, state_dir: Path, cashier_id: int, pin_record: str) -> PinGate:
        """A cashier's PIN (`pin_record`, its salted hash) behind the same pause, counted
        apart from the manager's and from every other cashier's."""
        return cls(
            state_dir,
            throttle_file=f"cashier-{cashier_id}.throttle",
            verify=lambda typed: manager_pin.record_matches(pin_record, typed),
        )

    def wait_s(self) -> float:
        """Seconds until a PIN may be tried again (0 when it may be tried now)."""
        return self._current(self.clock())[1]

    def check(self, pin: str) -> PinCheck:
        """Try a PIN. A locked gate does not even look at it."""
        if self._verify is None and not manager_pin.has_pin(self.state_dir):
            return PinCheck("no_pin")
        now = self.clock()
        state, left = self._current(now)
        if left > 0:
            return PinCheck("locked", wait_s=left)
        if self._verify(pin) if self._verify else manager_pin.verify_pin(self.state_dir, pin):
            self._save(_Pause())
            return PinCheck("ok")
        failures = state.failures + 1
        if failures >= FREE_ATTEMPTS:
            pause = min(MAX_PAUSE_S, PAUSE_S * 2.0 ** (failures - FREE_ATTEMPTS))
            self._save(_Pause(failures, now.boot, now.up + pause, now.wall + pause, pause))
            return PinCheck("locked", wait_s=pause)
        self._save(_Pause(failures))
        return PinCheck("wrong", attempts_left=FREE_ATTEMPTS - failures)
