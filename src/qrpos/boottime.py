"""The step-proof clock: this boot's id and its CLOCK_BOOTTIME seconds.

A Raspberry Pi has no battery clock, and NTP steps its wall clock by hours; CLOCK_BOOTTIME
never steps and counts a suspend. What must last a given number of real seconds (money's
deadlines in `qrpos.ledger.clock`, the manager PIN's pause in `qrpos.reports.pin_gate`) is
counted on it, together with the boot id that says whether a stored reading is of this boot.
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
