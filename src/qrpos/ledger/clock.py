"""The step-proof clock: this boot's id and its CLOCK_BOOTTIME seconds.

A Raspberry Pi has no battery clock, and NTP steps its wall clock by hours; CLOCK_BOOTTIME
never steps and counts a suspend. Money's deadlines are counted on it
(`qrpos.ledger.timing`). This is the one module of the ledger that reads a clock for money;
the decision core takes what it read as a `Moment` (`qrpos.ledger.states`).
"""

from __future__ import annotations

import time
from pathlib import Path


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return None  # not Linux: no step-proof stamps, the wall clock alone


#: this boot's id (None where the system does not tell)
BOOT_ID = _boot_id()


def uptime_s() -> float:
    """Seconds on a clock that NTP never steps and that counts a suspend (CLOCK_BOOTTIME)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


def boot_stamp() -> tuple[str | None, float | None]:
    """A step-proof stamp (this boot's id, `uptime_s`), stored with an unclear request's
    end: waiting for late commits is then counted in real seconds on this boot, however
    the wall clock moves (`real_seconds_since`)."""
    return BOOT_ID, (uptime_s() if BOOT_ID else None)


def real_seconds_since(boot: str | None, up: float | None) -> float | None:
    """Real seconds since a stamp taken on this boot; None for another boot or no stamp
    (then only the wall clock can tell)."""
    if boot is None or up is None or boot != BOOT_ID:
        return None
    return uptime_s() - up
