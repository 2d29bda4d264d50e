"""Issue 48: a cloned card's refusal stays on tty1 under systemd instead of a restart loop.

`qrpos run` on a refused card used to exit 1, and `Restart=always` started it again every
2 s: the reason flashed between starts. Under systemd (`NOTIFY_SOCKET`) it now stays up,
says READY with the reason as its status, feeds the watchdog, and keeps the reason on the
screen. The notify socket is a real AF_UNIX datagram socket in tmp_path; the refusal is the
real `ClonedStateDir` of a copied state dir; the only seam replaced is the kiosk's launch
(`qrpos.kiosk.launch.run_kiosk`, which would draw the Textual app) and the hold's sleep.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from qrpos.cli import main
from qrpos.config import Config
from qrpos.identity import ClonedStateDir, check_machine
from qrpos.kiosk import launch, refusal

CARD_A = "0123456789abcdef0123456789abcdef"
CARD_B = "fedcba9876543210fedcba9876543210"


class Stopped(Exception):
    """`systemctl stop`: ends the held refusal in the test."""


def _cloned_refusal(tmp_path: Path) -> ClonedStateDir:
    (tmp_path / "a-id").write_text(CARD_A + "\n", encoding="ascii")
    (tmp_path / "b-id").write_text(CARD_B + "\n", encoding="ascii")
    check_machine(tmp_path / "state-a", tmp_path / "a-id")
    shutil.copytree(tmp_path / "state-a", tmp_path / "state-b")
    try:
        check_machine(tmp_path / "state-b", tmp_path / "b-id")
    except ClonedStateDir as exc:
        return exc
    raise AssertionError("the copied state dir was not refused")


def _notify_socket(tmp_path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.settimeout(2.0)
    return sock


def test_under_systemd_the_refusal_stays_up_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = _cloned_refusal(tmp_path)

    def run_kiosk(config: Config, factory: object) -> BaseException:
        return refused  # the services' start-up raised it (production_services)

    pings: list[float] = []

    def sleep(seconds: float) -> None:
        pings.append(seconds)
        if len(pings) == 3:
            raise Stopped

    monkeypatch.setattr(launch, "run_kiosk", run_kiosk)
    monkeypatch.setattr(refusal, "time", SimpleNamespace(sleep=sleep))
    with _notify_socket(tmp_path) as sock:
        monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
        monkeypatch.setenv("WATCHDOG_USEC", "30000000")
        monkeypatch.delenv("WATCHDOG_PID", raising=False)
        monkeypatch.setenv("QRPOS_BASE_URL", "https://service.example")
        monkeypatch.setenv("QRPOS_LANGUAGE", "en")
        with pytest.raises(Stopped):
            main(["--state-dir", str(tmp_path / "state-b"), "run"])
        messages = [sock.recv(4096).decode() for _ in range(4)]
    assert messages[0].startswith("READY=1\nSTATUS=refusing to sell: "), messages
    assert "another machine" in messages[0]
    assert messages[1:] == ["WATCHDOG=1"] * 3
    assert pings == [15.0] * 3  # half of WatchdogSec=30s
    screen = capsys.readouterr().err  # stderr is tty1 under the unit
    assert "another machine" in screen and "pair this machine as a new terminal" in screen
    assert CARD_A not in screen and CARD_B not in screen


def test_in_a_terminal_the_refusal_exits_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = _cloned_refusal(tmp_path)
    monkeypatch.setattr(launch, "run_kiosk", lambda config, factory: refused)
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    monkeypatch.setenv("QRPOS_BASE_URL", "https://service.example")
    monkeypatch.setenv("QRPOS_LANGUAGE", "en")
    assert main(["--state-dir", str(tmp_path / "state-b"), "run"]) == 1
    assert "another machine" in capsys.readouterr().err


def test_other_start_up_failures_are_not_held(tmp_path: Path) -> None:
    env = {"NOTIFY_SOCKET": str(tmp_path / "nowhere")}
    assert refusal.hold_refusal(RuntimeError("camera"), "camera", env=env) is False
    assert refusal.hold_refusal(None, "", env=env) is False
