"""The step-proof clock for money: stamps of this boot's id and its CLOCK_BOOTTIME seconds
(read in `qrpos.boottime`).

A Raspberry Pi has no battery clock, and NTP steps its wall clock by hours; CLOCK_BOOTTIME
never steps and counts a suspend. Money's deadlines are counted on it
(`qrpos.ledger.timing`). This is the one module of the ledger that reads a clock for money;
the decision core takes what it read as a `Moment` (`qrpos.ledger.states`).
"""

from __future__ import annotations

from qrpos.boottime import BOOT_ID, uptime_s

__all__ = ["BOOT_ID", "boot_stamp", "real_seconds_since", "uptime_s"]


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
