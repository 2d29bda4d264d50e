"""Start-up of the kiosk: process start → first screen drawn, and peak memory (RSS).

`qrpos demo` (the whole kiosk: sandbox, outbox, virtual camera, decoder) against a
minimal Textual app measured in the same run on the same machine. "First screen drawn"
is the kiosk's own sd_notify READY=1 (sent from the app's Ready event, after the first
frame), received on a notify socket this script owns; the minimal app sends the same.
Each process runs on a pseudo-terminal of 80×24. Peak RSS (VmHWM) of `qrpos demo` is read
after a whole sale keyed on that terminal (amount, Enter, the phone shown, charged): the
camera armed with the decoder's further passes, the outbox and the POST all included.
Targets: under 1.5× the minimal app's start time; RSS under 100 MB (10^6 bytes: the
stricter reading; MiB are printed beside).

Both sides start as an installed kiosk does: with their bytecode compiled (an install's
`pip install` compiles qrpos; a working copy's editable install may not have, and with
PYTHONDONTWRITEBYTECODE set it never would) and after one untimed run of each, so the
disk cache is warm for both.

    python benchmarks/startup.py            # 5 paired rounds: the median of their ratios
    python benchmarks/startup.py --quick    # 1 run of each (the test suite runs this)
"""

from __future__ import annotations

import argparse
import compileall
import fcntl
import os
import pty
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

MINIMAL_APP = """
from textual.app import App
from textual.widgets import Static
from qrpos import notify

class Minimal(App[None]):
    def compose(self):
        yield Static("hello")
    def on_ready(self):
        notify.ready()

Minimal().run()
"""

START_TIME_TARGET = 1.5
RSS_TARGET_MB = 100.0
#: a sale on the demo, as (seconds to wait first, keys): an amount, Enter, an empty counter
#: scanned for a while, then the phone; then time for the charge and the result
SALE_KEYS = ((0.0, b"1250"), (0.3, b"\r"), (1.5, b"p"), (3.0, b""))


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6  # kB (KiB) -> MB
    return float("nan")


def measure(
    argv: list[str], settle_s: float, keys: tuple[tuple[float, bytes], ...] = ()
) -> tuple[float, float]:
    """(seconds to READY=1, peak RSS in MB after `settle_s` more seconds of running and
    then `keys` typed on the terminal)."""
    with tempfile.TemporaryDirectory() as tmp:
        address = str(Path(tmp) / "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(address)
        sock.settimeout(30)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = {
            **os.environ,
            "NOTIFY_SOCKET": address,
            "TERM": "xterm-256color",
            "HOME": tmp,
            "QRPOS_LANGUAGE": "en",
        }
        stop = threading.Event()

        def drain() -> None:
            # the terminal's reader: without it the app blocks on a full pty buffer
            while not stop.is_set():
                try:
                    if not os.read(master, 65536):
                        return
                except OSError:
                    return

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        try:
            while True:
                message = sock.recv(4096).decode()
                if "READY=1" in message:
                    break
            ready_s = time.perf_counter() - start
            time.sleep(settle_s)
            for wait_s, data in keys:
                time.sleep(wait_s)
                os.write(master, data)
            rss = _peak_rss_mb(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            stop.set()
            os.close(slave)
            os.close(master)
            sock.close()
        return ready_s, rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run of each")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    settle = 0.5 if args.quick else 2.0
    qrpos = str(Path(sys.executable).with_name("qrpos"))
    cases = {
        "minimal Textual app": ([sys.executable, "-c", MINIMAL_APP], ()),
        "qrpos demo": ([qrpos, "demo"], SALE_KEYS),
    }
    import qrpos

    # as installed: every module of qrpos compiled once (pip does this on an install)
    compileall.compile_dir(Path(qrpos.__file__).parent, quiet=1)
    for argv, _ in cases.values():
        measure(argv, 0.0)  # untimed: warms the disk cache and any first-run work
    # paired rounds, the order alternating: a change in the machine's load during the run
    # moves both sides of a round alike, where blocks of one app then the other would
    # put it all on one side of the ratio
    times: dict[str, list[float]] = {name: [] for name in cases}
    rss: dict[str, list[float]] = {name: [] for name in cases}
    ratios: list[float] = []
    names = list(cases)
    for round_ in range(runs):
        for name in names if round_ % 2 == 0 else names[::-1]:
            argv, keys = cases[name]
            t, r = measure(argv, settle, keys)
            times[name].append(t)
            rss[name].append(r)
        ratios.append(times["qrpos demo"][-1] / times["minimal Textual app"][-1])
    for name in names:
        print(
            f"{name:22s} first screen {statistics.median(times[name]) * 1000:7.0f} ms   "
            f"peak RSS {max(rss[name]):6.1f} MB   ({runs} run(s))"
        )
    ratio = statistics.median(ratios)
    demo_rss = max(rss["qrpos demo"])
    print("start time ratio of each round: " + ", ".join(f"{r:.2f}x" for r in ratios))
    print(
        f"start time ratio qrpos demo / minimal: {ratio:.2f}x, the median of {runs} paired"
        f" round(s) (target < {START_TIME_TARGET}x:"
        f" {'met' if ratio < START_TIME_TARGET else 'NOT met'})"
    )
    print(
        f"qrpos demo peak RSS: {demo_rss:.1f} MB ({demo_rss * 1e6 / 2**20:.1f} MiB) through a sale "
        f"(target < {RSS_TARGET_MB:.0f} MB: {'met' if demo_rss < RSS_TARGET_MB else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
