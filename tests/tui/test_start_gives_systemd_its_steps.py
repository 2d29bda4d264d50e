"""The kiosk's start tells systemd each step it takes (`notify.extend_start`), so the
unit's `TimeoutStartSec=90s` bounds a step, not the whole start (issue 48).

Under emulation the start took 80-100 s to its first screen (docs/installing.md), beside
a 90 s start bound: a start slowed past it was killed before its first screen and
`Restart=always` began it again, for ever (a card that never reached its kiosk after a
plug pull, run beside other work). The real `qrpos demo` in a terminal (tmux) with a
notify socket of the test's own: two EXTEND_TIMEOUT_USEC messages (the app's import,
then the first screen) come before READY=1, none after it.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from test_demo_tmux import QRPOS, Tmux

from qrpos.kiosk.launch import FIRST_SCREEN_STEP_S, IMPORT_STEP_S


def _messages(sock: socket.socket, until_ready_s: float) -> list[str]:
    """What reached the socket until READY=1, and for a second after it."""
    got: list[str] = []
    give_up = time.monotonic() + until_ready_s
    after_ready: float | None = None
    while time.monotonic() < (after_ready or give_up):
        try:
            got.append(sock.recv(4096).decode())
        except TimeoutError:
            continue
        if got[-1].startswith("READY=1") and after_ready is None:
            after_ready = time.monotonic() + 1.0
    return got


def test_the_start_extends_its_timeout_step_by_step_before_ready(tmp_path: Path) -> None:
    path = str(tmp_path / "notify")
    tmux = Tmux(tmp_path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(0.2)
        env = {**os.environ, "HOME": str(tmp_path), "TERM": "xterm-256color"}
        env["NOTIFY_SOCKET"] = path
        env.pop("WATCHDOG_USEC", None)
        tmux.start(f"{QRPOS} demo --language en", env)
        try:
            got = _messages(sock, until_ready_s=90.0)
            tmux.wait_for("Enter the amount")
        finally:
            tmux.stop()
    ready = [i for i, m in enumerate(got) if m.startswith("READY=1")]
    assert ready, got
    before, after = got[: ready[0]], got[ready[0] + 1 :]
    assert before == [
        f"EXTEND_TIMEOUT_USEC={round(IMPORT_STEP_S * 1e6)}",
        f"EXTEND_TIMEOUT_USEC={round(FIRST_SCREEN_STEP_S * 1e6)}",
    ], got
    assert not [m for m in after if m.startswith("EXTEND_TIMEOUT_USEC")], got
