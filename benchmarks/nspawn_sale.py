"""Inside a booted root (`systemd-nspawn --boot`, run by benchmarks/install_in_root.sh):
the installed unit starts, pings its watchdog, and a sale completes through the replay
camera, as on a till.

    /opt/qrpos/venv/bin/python /opt/qrpos-src/benchmarks/nspawn_sale.py [--patience S]

What is real: the unit as install.sh wrote it (Type=notify, WatchdogSec, the sandboxing),
the credential as provision.sh stores it (systemd-creds), `qrpos run` as the unit starts
it, the charge over HTTP to the sandbox service (`qrpos simulator`, on loopback) and the
outbox in /var/lib/qrpos. What stands in for the till: the camera is `[scanner] source =
"replay"` looping a PNG of the wallet's QR code, and the screen is a pseudo-terminal this
script holds (a drop-in points TTYPath at it: a container has no /dev/tty1), on which it
types the amount and reads what the kiosk draws.

Prints one line per check (`ok` or `FAIL`) and exits 1 if any failed. Leaves the root as
install.sh left it: its config.toml is put back and the drop-in removed; the pairing
(credential, terminal.toml) stays, naming a sandbox that is gone.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pwd
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import httpx
import segno

VENV = "/opt/qrpos/venv"
QRPOS = f"{VENV}/bin/qrpos"
CONFIG = Path("/etc/qrpos/config.toml")
REPLAY = Path("/etc/qrpos/nspawn-check/pass.png")
DROP_IN = Path("/etc/systemd/system/qrpos.service.d/nspawn-check.conf")
PROVISION = Path("/opt/qrpos-src/deploy/provision.sh")
AMOUNT = 1250
BALANCE = 100_000
#: escape sequences a terminal acts on: removed to read the text the kiosk drew
_ESCAPES = re.compile(
    r"\x1b\[[0-9;?<=>]*[ -/]*[@-~]"  # CSI: cursor, colour, modes
    r"|\x1b\][^\x07\x1b]*(\x07|\x1b\\)"  # OSC: title
    r"|\x1b[()][0-9A-Za-z]|\x1b[=>78cM]"  # charsets, keypad, save/restore, reset
)

failed = False


def check(name: str, ok: bool, detail: str = "") -> None:
    """One line per check, as install_in_root.sh prints its own."""
    global failed
    print(f"{'ok  ' if ok else 'FAIL'}  {name}{': ' + detail if detail else ''}", flush=True)
    failed = failed or not ok


def systemctl(*args: str) -> str:
    return subprocess.run(
        ["systemctl", *args], capture_output=True, text=True, check=False
    ).stdout.strip()


def prop(name: str) -> str:
    return systemctl("show", "qrpos.service", f"--property={name}", "--value")


class Screen:
    """The pseudo-terminal the unit draws on: its slave's name for TTYPath, the text read
    from its master (escapes removed), keystrokes written into it."""

    def __init__(self, rows: int = 24, cols: int = 80) -> None:
        self.master, self._slave = os.openpty()
        fcntl.ioctl(self._slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.path = os.ttyname(self._slave)
        kiosk = pwd.getpwnam("qrpos")
        os.chown(self.path, kiosk.pw_uid, kiosk.pw_gid)
        self.text = ""

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([self.master], [], [], left)
            if not ready:
                return
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the slave hung up between two kiosk processes
                time.sleep(0.2)
                continue
            self.text += _ESCAPES.sub("", chunk.decode("utf-8", "replace"))

    def wait_for(self, *texts: str, patience: float, since: int = 0) -> str | None:
        """The first of `texts` drawn after offset `since`, or None after `patience`."""
        end = time.monotonic() + patience
        while time.monotonic() < end:
            for text in texts:
                if text in self.text[since:]:
                    return text
            self.read(0.5)
        return None

    def type(self, keys: str) -> None:
        for key in keys:  # a key at a time, as a cashier types
            os.write(self.master, key.encode())
            time.sleep(0.15)


def run_reading(screen: Screen, argv: list[str], stdin: str = "") -> tuple[int, str]:
    """Run a command while the screen is read: a kiosk whose terminal nobody reads blocks
    on its next write, and stops pinging its watchdog."""
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
        out = proc.stdout.fileno()
        os.set_blocking(out, False)
        got = b""
        while True:
            screen.read(0.3)
            try:
                chunk = os.read(out, 65536)
            except BlockingIOError:
                continue
            if not chunk:  # the command closed its output: it has ended
                break
            got += chunk
        return proc.wait(), got.decode("utf-8", "replace")


def unit_up(screen: Screen, patience: float, when: str) -> None:
    """The unit active (READY=1 after the first screen), and its watchdog pinged since."""
    started = time.monotonic()
    while prop("ActiveState") != "active" and time.monotonic() - started < patience:
        screen.read(0.5)
    active = prop("ActiveState")
    check(
        f"the unit starts {when} (Type=notify: READY=1 once the first screen is drawn)",
        active == "active",
        f"{active} after {time.monotonic() - started:.0f} s, {os.path.realpath(VENV)}",
    )
    # the kiosk pings every WATCHDOG_USEC / 2 (15 s here): over 32 s, two pings at least,
    # each one moving the unit's WatchdogTimestamp
    seen = [prop("WatchdogTimestampMonotonic")]
    end = time.monotonic() + 32.0
    while time.monotonic() < end:
        screen.read(1.0)
        now = prop("WatchdogTimestampMonotonic")
        if now != seen[-1]:
            seen.append(now)
    pings = len(seen) - 1
    check(
        "its watchdog pings",
        pings >= 2 and "0" not in seen,
        f"{pings} pings in 32 s (WatchdogSec={prop('WatchdogUSec')}), restarts {prop('NRestarts')}",
    )


def sell(screen: Screen, patience: float) -> bool:
    """Type the amount on the kiosk's screen; True once it shows APPROVED."""
    shown = screen.wait_for("Enter the amount", patience=patience)
    check("the amount screen is drawn", shown is not None)
    mark = len(screen.text)
    screen.type(f"{AMOUNT}\r")
    shown = screen.wait_for("APPROVED", "press Enter to charge it", patience=patience, since=mark)
    if shown == "press Enter to charge it":  # the pass was in view before the sale
        mark = len(screen.text)
        screen.type("\r")
        shown = screen.wait_for("APPROVED", patience=patience, since=mark)
    check(f"a sale of {AMOUNT} MNT through the replay camera", shown == "APPROVED",
          "APPROVED on the kiosk's screen" if shown else screen.text[-600:])  # fmt: skip
    if shown == "APPROVED":
        screen.type("x")  # next customer: the amount screen again
    return shown == "APPROVED"


def show_pass(sim: httpx.Client, wallet_id: str) -> None:
    """The wallet's current QR token as the replay camera's image (it changes after every
    charge, as a real pass does)."""
    token = sim.get(f"/_sim/wallets/{wallet_id}").json()["qrToken"]
    REPLAY.parent.mkdir(parents=True, exist_ok=True)
    segno.make_qr(token, error="m").save(str(REPLAY), scale=6, border=4)
    print(f"      wallet {wallet_id}, pass …{token[-4:]} in {REPLAY}", flush=True)


def outbox() -> list[dict[str, object]]:
    """The kiosk's outbox as `qrpos outbox list` gives it, read as the kiosk's own user."""
    listed = subprocess.run(
        ["runuser", "-u", "qrpos", "--", QRPOS, "outbox", "list", "--all", "--json"],
        capture_output=True, text=True, cwd="/", check=False,
    )  # fmt: skip
    rows: list[dict[str, object]] = json.loads(listed.stdout or "[]")
    return rows


def settled(sim: httpx.Client, wallet_id: str, sales: int, earlier: set[object]) -> None:
    """The sandbox charged the wallet `sales` times; the outbox holds as many new charged
    sales (a root checked before keeps the sales of earlier runs: `earlier`)."""
    balance = sim.get(f"/_sim/wallets/{wallet_id}").json()["balanceMNT"]
    want = BALANCE - sales * AMOUNT
    check(f"the wallet was charged {sales} time(s)", balance == want, f"{balance} MNT left")
    new = [r for r in outbox() if r.get("id") not in earlier and r.get("kind") == "charge"]
    check(
        "the outbox holds them, charged",
        [(r.get("amountMNT"), r.get("charged")) for r in new] == [(AMOUNT, True)] * sales,
        f"{len(new)} new sale(s) in the outbox",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patience", type=float, default=180.0, help="seconds per step")
    parser.add_argument(
        "--update",
        metavar="COMMAND",
        help="after the first sale, run this (bash -c) to update the kiosk, then sell again",
    )
    args = parser.parse_args()
    patience = args.patience
    saved_config = CONFIG.read_text()
    simulator = subprocess.Popen(
        [QRPOS, "simulator", "--host", "127.0.0.1", "--port", "0", "--no-rate-limit"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert simulator.stdout is not None
        base_url = simulator.stdout.readline().strip()
        check("sandbox service", base_url.startswith("http://"), base_url)
        with httpx.Client(base_url=base_url, timeout=30) as sim:
            terminal = sim.post("/_sim/terminals", json={"merchant": "m_nspawn"}).json()
            wallet_id = sim.post("/_sim/wallets", json={"balanceMNT": BALANCE}).json()["walletID"]
            show_pass(sim, wallet_id)
            CONFIG.write_text(
                'state_dir = "/var/lib/qrpos"\nlanguage = "en"\n\n[scanner]\n'
                f'source = "replay"\npath = "{REPLAY}"\nloop = true\n'
            )
            screen = Screen()
            DROP_IN.parent.mkdir(parents=True, exist_ok=True)
            DROP_IN.write_text(
                "# benchmarks/nspawn_sale.py: a container has no /dev/tty1\n"
                f"[Service]\nTTYPath={screen.path}\nDeviceAllow={screen.path} rw\n"
            )
            systemctl("daemon-reload")
            status, out = run_reading(
                screen,
                ["bash", str(PROVISION), "--base-url", base_url, "--username",
                 terminal["username"], "--no-pin"],
                stdin=terminal["password"] + "\n",
            )  # fmt: skip
            last = out.strip().splitlines()[-1:] or [""]
            check("provision.sh pairs and starts the unit", status == 0, last[0])
            unit_up(screen, patience, "after provision.sh")
            earlier = {r.get("id") for r in outbox()}
            if sell(screen, patience):
                settled(sim, wallet_id, 1, earlier)
            if args.update:
                before = os.path.realpath(VENV)
                show_pass(sim, wallet_id)  # read again when the new release starts
                status, out = run_reading(screen, ["bash", "-c", args.update])
                print("\n".join("      | " + line for line in out.strip().splitlines()[-12:]))
                after = os.path.realpath(VENV)
                check("the update switched releases", status == 0 and after != before,
                      f"exit {status}: {before} -> {after}")  # fmt: skip
                unit_up(screen, patience, "on the new release")
                if sell(screen, patience):
                    settled(sim, wallet_id, 2, earlier)
            restarts = prop("NRestarts")
            check("no restart by the watchdog or a crash", restarts == "0", f"NRestarts={restarts}")
    finally:
        systemctl("stop", "qrpos.service")
        simulator.terminate()
        simulator.wait(timeout=30)
        CONFIG.write_text(saved_config)
        DROP_IN.unlink(missing_ok=True)
        shutil.rmtree(REPLAY.parent, ignore_errors=True)
        systemctl("daemon-reload")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
