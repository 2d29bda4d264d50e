"""`qrpos demo` drives the peripherals its settings name, as `qrpos run` does (issue 49):
a pole display and a handheld scanner, each on a pseudo-terminal, set by environment
variables or in the config file, the demo run as a person runs it, in a terminal (tmux).

The scanner types the code of a wallet the test adds to the demo's own sandbox (found
on the loopback port the demo's process listens on, through its admin API `/_sim`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import subprocess
import termios
import time
import tty
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_demo_tmux import PATIENCE_S, QRPOS, Tmux
from virtual_pole_link import pole_pair

from qrpos import spec
from qrpos.cli.kiosk import demo_config

#: the amount keyed in each run (within the wallet's balance)
AMOUNT = 7_500
WALLET_BALANCE = 20_000


def _until(what: str, holds: Callable[[], object], timeout: float = PATIENCE_S) -> None:
    give_up = time.monotonic() + timeout
    while not holds():
        if time.monotonic() > give_up:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _listening_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on (its sockets' inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = str(fd.readlink())
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _admin(base_url: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base_url + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


class Handheld:
    """A serial handheld scanner: the demo reads the far end of a pseudo-terminal."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)

    def opened(self) -> bool:
        """The reader has opened and configured its port (pyserial sets its speed)."""
        speed: int = termios.tcgetattr(self.slave)[5]
        return speed == termios.B115200

    def scan(self, code: str) -> None:
        os.write(self.master, code.encode() + b"\r\n")

    def close(self) -> None:
        for fd in (self.master, self.slave):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def handheld() -> Iterator[Handheld]:
    scanner = Handheld()
    try:
        yield scanner
    finally:
        scanner.close()


def _frames_with(pole: Any, *parts: bytes) -> list[bytes]:
    return [f for f in pole.frames() if all(p in f for p in parts)]


def _sell_through_the_demo(tmux: Tmux, pole: Any, scanner: Handheld) -> None:
    """Key an amount, see it on the pole display while the till waits, scan, see it paid
    on the cashier's screen and the pole display, and the wallet charged once."""
    tmux.wait_for("Enter the amount")
    pid = int(tmux("display-message", "-p", "-t", tmux.session, "#{pane_pid}").strip())
    _until("the demo's sandbox to listen", lambda: _listening_ports(pid))
    (port,) = _listening_ports(pid)
    service = f"http://127.0.0.1:{port}"
    token = spec.TOKEN_PREFIX + secrets.token_urlsafe(30)
    new_wallet = {"balanceMNT": WALLET_BALANCE, "qrToken": token}
    wallet = _admin(service, "POST", "/_sim/wallets", new_wallet)
    amount = f"{AMOUNT:,}".encode()  # "7,500"
    tmux.keys(*str(AMOUNT), "Enter")
    tmux.wait_for("show the wallet pass")
    # the amount reaches the pole display while the till waits for a code
    _until("the amount on the pole display", lambda: _frames_with(pole, b"Pay", amount))
    assert not _frames_with(pole, b"PAID")
    _until("the handheld scanner's port to open", scanner.opened)
    time.sleep(0.5)  # pyserial empties the port's input just after it sets its speed
    tmux.wait_for("show the wallet pass")  # still waiting: nothing was charged yet
    assert _admin(service, "GET", f"/_sim/wallets/{wallet['walletID']}")["balanceMNT"] == (
        WALLET_BALANCE
    )
    scanner.scan(token)
    shown = tmux.wait_for("APPROVED")
    assert "unsettled 0" in shown  # the sale is proven, not waiting in the outbox
    _until("PAID on the pole display", lambda: _frames_with(pole, b"PAID", amount))
    after = _admin(service, "GET", f"/_sim/wallets/{wallet['walletID']}")
    assert after["balanceMNT"] == WALLET_BALANCE - AMOUNT


def _history_asks_for_the_pin(tmux: Tmux) -> None:
    """`[owner] pin_screens` / QRPOS_OWNER_PIN_SCREENS: the history opens after the PIN."""
    tmux.keys("x")  # the result ends
    tmux.wait_for("Enter the amount")
    tmux.keys("F2")
    tmux.wait_for("1–6 or L choose")
    tmux.keys("1")
    tmux.wait_for("Manager PIN")
    assert "P copy" not in tmux.screen()
    tmux.keys("1", "2", "3", "4", "Enter")  # the demo's manager PIN
    tmux.wait_for("P copy")


def _demo_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("QRPOS_") and k not in ("STATE_DIRECTORY", "JOURNAL_STREAM")
    }
    return {**env, "HOME": str(tmp_path), "TERM": "xterm-256color", **settings}


def _printed(paper: Path) -> bool:
    return paper.exists() and paper.read_bytes().startswith(b"\x1b@")


def test_the_demo_drives_the_pole_display_and_handheld_named_by_the_environment(
    tmp_path: Path,
) -> None:
    """QRPOS_CUSTOMER_DISPLAY, QRPOS_PRINTER, QRPOS_LANGUAGE and QRPOS_OWNER_PIN_SCREENS
    in the environment;
    the handheld scanner (no variable sets one) in a file given with --config."""
    tmux = Tmux(tmp_path)
    paper = tmp_path / "lp0"
    with pole_pair(tmp_path) as pole, handheld() as scanner:
        config = tmp_path / "handheld.toml"
        config.write_text(f'[scanner]\nhandheld = "serial:{scanner.path}@115200"\n')
        env = _demo_env(
            tmp_path,
            QRPOS_CUSTOMER_DISPLAY=f"vfd:{pole.path}@9600",
            QRPOS_PRINTER=f"file:{paper}",
            QRPOS_LANGUAGE="en",
            QRPOS_OWNER_PIN_SCREENS="history",
        )
        tmux.start(f"exec {QRPOS} demo --config {config}", env)
        try:
            _sell_through_the_demo(tmux, pole, scanner)
            _until("the slip on the printer", lambda: _printed(paper))
            _history_asks_for_the_pin(tmux)
        finally:
            tmux.stop()
    # ESC/POS (the default protocol): each frame moves the cursor with US $
    assert _frames_with(pole, b"\x1f$\x01\x01", b"PAID")


def test_the_demo_drives_the_pole_display_and_handheld_named_in_the_config_file(
    tmp_path: Path,
) -> None:
    """Every setting in the file QRPOS_CONFIG names: the display (with its protocol),
    the handheld scanner, the printer, the language and the screens behind the PIN; no
    QRPOS_* setting else."""
    tmux = Tmux(tmp_path)
    paper = tmp_path / "lp0"
    with pole_pair(tmp_path) as pole, handheld() as scanner:
        config = tmp_path / "config.toml"
        config.write_text(
            'language = "en"\n'
            "[scanner]\n"
            f'handheld = "serial:{scanner.path}@115200"\n'
            "[customer_display]\n"
            f'device = "vfd:{pole.path}@9600"\n'
            'protocol = "cd5220"\n'
            "[printer]\n"
            f'device = "file:{paper}"\n'
            "[owner]\n"
            'pin_screens = ["history"]\n'
        )
        env = _demo_env(tmp_path, QRPOS_CONFIG=str(config))
        tmux.start(f"exec {QRPOS} demo", env)
        try:
            _sell_through_the_demo(tmux, pole, scanner)
            _until("the slip on the printer", lambda: _printed(paper))
            _history_asks_for_the_pin(tmux)
        finally:
            tmux.stop()
    # CD5220, as the file says: each line after ESC Q A / ESC Q B
    assert _frames_with(pole, b"\x1bQA", b"PAID")


def _args(**given: Any) -> argparse.Namespace:
    return argparse.Namespace(
        keep_state=bool(given.get("keep_state")),
        state_dir=given.get("state_dir"),
        language=given.get("language"),
        config=given.get("config"),
    )


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in list(os.environ):
        if name.startswith("QRPOS_") or name == "STATE_DIRECTORY":
            monkeypatch.delenv(name)
    return tmp_path


def test_the_demo_reads_every_table_of_the_file_but_keeps_its_own_service_and_outbox(
    clean_env: Path,
) -> None:
    """What the demo takes from the file `qrpos run` reads, and what it keeps its own:
    the sandbox stands for the service, and demo sales never join the till's outbox."""
    till = clean_env / "till-state"
    config = clean_env / "config.toml"
    config.write_text(
        'base_url = "https://pay.example.mn"\n'
        'username = "term_ab12cd34"\n'
        f'state_dir = "{till}"\n'
        '[sound]\noutput = "off"\n'
        '[owner]\npin_screens = ["history"]\n'
        '[scanner]\nhandheld = "serial:/dev/ttyACM7"\ndecoder = "zbar"\n'
    )
    throwaway = clean_env / "throwaway"
    demo = demo_config(_args(config=config), lambda: throwaway)
    assert demo.sound == {"output": "off"}
    assert demo.owner_pin_screens == frozenset({"history"})
    assert demo.scanner == {"handheld": "serial:/dev/ttyACM7", "decoder": "zbar"}
    assert demo.state_dir == throwaway and demo.base_url is None and demo.username is None


def test_a_setting_the_demo_cannot_use_stops_it_as_it_stops_qrpos_run(clean_env: Path) -> None:
    """Before any screen: the command says which setting, in the file `qrpos run` reads."""
    config = clean_env / "config.toml"
    config.write_text('[owner]\npin_screens = ["tills"]\n')
    env = {**os.environ, "QRPOS_CONFIG": str(config), "QRPOS_LANGUAGE": "en"}
    for command in ("run", "demo"):
        done = subprocess.run(
            [str(QRPOS), command], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 1, (command, done.stderr)
        assert "pin_screens" in done.stderr and "tills" in done.stderr, done.stderr
