"""systemd sd_notify without libsystemd: READY=1, WATCHDOG=1, STATUS=, EXTEND_TIMEOUT_USEC=.

Every function is a no-op (returning False) when not started by systemd with
`Type=notify`, so the kiosk runs the same in a terminal, in tests and under systemd.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping


def _socket_address(env: Mapping[str, str]) -> str | None:
    address = env.get("NOTIFY_SOCKET")
    if not address:
        return None
    if address.startswith("@"):
        # abstract namespace socket
        return "\0" + address[1:]
    return address


def sd_notify(*states: str, env: Mapping[str, str] | None = None) -> bool:
    """Send `states` (e.g. ``"READY=1"``) to systemd; True when a message was sent."""
    env = os.environ if env is None else env
    address = _socket_address(env)
    if address is None or not states:
        return False
    message = "\n".join(states).encode("utf-8")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message)
    except OSError:
        return False
    return True


def ready(status: str = "", env: Mapping[str, str] | None = None) -> bool:
    """The first screen is drawn: tell systemd we are up."""
    states = ["READY=1"] + ([f"STATUS={status}"] if status else [])
    return sd_notify(*states, env=env)


def extend_start(seconds: float, env: Mapping[str, str] | None = None) -> bool:
    """Still starting, and a step further: give the unit's start timeout `seconds` more,
    counted from now (EXTEND_TIMEOUT_USEC, systemd 236 and later; ignored after READY=1).

    The unit's `TimeoutStartSec` then bounds a step of the start, not the whole start: a
    kiosk that is slow to import (a cold SD card, bytecode compiled on the first start
    after an update, an emulated CPU) comes up, where a fixed bound killed it before its
    first screen and `Restart=always` started it again, for ever; one that hangs in a
    step is still stopped once the step's time is out."""
    return sd_notify(f"EXTEND_TIMEOUT_USEC={max(1, round(seconds * 1_000_000))}", env=env)


def status(text: str, env: Mapping[str, str] | None = None) -> bool:
    """A one-line status shown by `systemctl status`."""
    return sd_notify(f"STATUS={text}", env=env)


def watchdog_ping(env: Mapping[str, str] | None = None) -> bool:
    """Tell systemd the UI's event loop is alive."""
    return sd_notify("WATCHDOG=1", env=env)


def stopping(env: Mapping[str, str] | None = None) -> bool:
    return sd_notify("STOPPING=1", env=env)


def watchdog_period_s(env: Mapping[str, str] | None = None) -> float | None:
    """How often to ping: half of `WATCHDOG_USEC`, or None when no watchdog is set.

    Honours `WATCHDOG_PID` (the watchdog is meant for another process when it differs).
    """
    env = os.environ if env is None else env
    usec = env.get("WATCHDOG_USEC")
    if not usec:
        return None
    pid = env.get("WATCHDOG_PID")
    if pid and pid.isdigit() and int(pid) != os.getpid():
        return None
    try:
        value = int(usec)
    except ValueError:
        return None
    return value / 1_000_000 / 2 if value > 0 else None
