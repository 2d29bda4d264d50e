"""A kiosk that must not sell keeps saying why on its screen, under systemd.

`qrpos run` on a card whose state dir was made on another machine (`ClonedStateDir`: a
card cloned after pairing) refuses to open the outbox. Exiting would have systemd start it
again every 2 s (`Restart=always`): the reason flashes on tty1 between two starts and the
VT is cleared each time, so the installer sees a flicker, not a sentence. Under systemd
the refused kiosk therefore stays up: the reason on the screen (stderr is tty1) and in
`systemctl status`, the watchdog fed, until the installer stops the unit and fixes the card
(docs/installing.md, "One image, many cards"). In a terminal it exits as any refusal does.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping

from qrpos import notify
from qrpos.identity import ClonedStateDir

log = logging.getLogger(__name__)

#: how often the held refusal feeds the watchdog when systemd sets none (seconds)
DEFAULT_PING_S = 10.0


def under_systemd(env: Mapping[str, str]) -> bool:
    """Started by systemd with `Type=notify` (the kiosk's unit)."""
    return bool(env.get("NOTIFY_SOCKET"))


def hold_refusal(
    error: BaseException | None,
    said: str,
    *,
    env: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> bool:
    """Keep a refused kiosk up under systemd, its reason `said` on tty1; never returns
    unless `sleep` raises (SIGTERM from `systemctl stop` ends the process). False at once
    when the error is not a refusal to hold, or the kiosk is not under systemd."""
    env = os.environ if env is None else env
    pause = time.sleep if sleep is None else sleep
    if not isinstance(error, ClonedStateDir) or not under_systemd(env):
        return False
    log.error("refusing to sell: %s", said)
    notify.ready(status=f"refusing to sell: {said}"[:200], env=env)
    period = notify.watchdog_period_s(env) or DEFAULT_PING_S
    while True:
        notify.watchdog_ping(env=env)
        pause(period)
