"""Plug pulls mid-sale on a booted card image: each boot recovers, each sale is resolved,
no wallet is charged twice.

    sudo python benchmarks/image_pulls.py [--pulls N] [--seed S] [--arch amd64|arm64]
                                          [--image FILE] [--accel kvm|tcg] [--patience S]
                                          [--card-size 4G] [--append WORDS]

The card boots as benchmarks/image_boot.py boots it (its kernel, the first boot, pairing by
system credentials with the sandbox service on this machine's loopback, the kiosk on the
second serial port), plus a camera: a second small disk (FAT, serial `qrcam`) holding a
PNG of a wallet pass's QR code and a config.toml whose `[scanner]` is the replay camera
looping that picture. The card mounts it with `systemd.mount-extra=` and the kiosk reads
that config by `systemd.setenv=QRPOS_CONFIG=` (both on the kernel command line: the image
is not changed; systemd 254 or later, so trixie, not bookworm). Each sale charges a wallet
of its own, its pass put on the camera disk before the boot that sells it.

For each pull: the amount is typed on the kiosk's tty, Enter pressed, and QEMU is killed
(SIGKILL: the plug) at a moment drawn from --seed: "before the send" (0 to 0.5 s after
Enter), "in flight" (the sandbox holds the charge 8 s before it commits: 0 to 4 s after the
kiosk draws its charging screen) or "after the 201" (0 to 0.3 s after the sandbox's books
show the charge); moments come in seeded blocks of three. Then the same overlay (the card)
boots again until the kiosk sells: its amount screen after the recovery screen
(src/qrpos/tui/sale.py recover settles what a pull left open first; the amount screen drawn
while it starts refuses keys), and it sells the next wallet. After the last pull one more
boot resolves the last sale, and its plug is pulled too. A sale in review (needs_review:
no resend across a reboot, a person decides) is counted apart, not failed.

Then the overlay is read without booting: e2fsck (the journal replayed, clean?), the outbox
(/var/lib/qrpos/outbox.sqlite3 and its WAL) copied out with debugfs, and every sale judged
from the sandbox's books and the card's ledger (benchmarks/pull_judge.py): charged once
and charged in the ledger, or charged in neither; never twice, never left open. Prints one
line per pull and the figures; exits 1 if anything failed. Run QEMU's host tools as root
(debugfs reads the overlay's file system).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import segno

import image_boot as ib
from pull_judge import judge

AMOUNT = 1250
BALANCE = 100_000
MOMENTS = ("before the send", "in flight", "after the 201")
#: the sandbox holds an "in flight" charge this long before it commits
HOLD_S = 8.0
CAMERA = "/srv/qrpos-camera"
CAMERA_APPEND = (
    f"systemd.mount-extra=/dev/disk/by-id/virtio-qrcam:{CAMERA}:vfat:ro"
    f" systemd.setenv=QRPOS_CONFIG={CAMERA}/config.toml"
)
#: the whole config of the kiosk under test (QRPOS_CONFIG replaces /etc/qrpos/config.toml;
#: the pairing's username stays in the state dir, its password in the credential)
CONFIG = f"""\
base_url = "{ib.GUEST_BASE_URL}"
state_dir = "/var/lib/qrpos"
language = "en"

[scanner]
source = "replay"
decoder = "zbar"
path = "{CAMERA}/pass.png"
loop = true
fps = 4
"""
#: what the kiosk's screen shows, newest last, in the words of locales/en/kiosk.toml
SCREENS = {
    "amount": "Enter the amount",
    "waiting": "Waiting for the QR code",
    "charging": "Charging…",
    "sending": "Sending the payment",
    "approved": "APPROVED",
    "not charged": "NOT CHARGED",
    "held": "press Enter to charge it",
    "recovering": "Settling unfinished payments",
}
OUTBOX = "/var/lib/qrpos/outbox.sqlite3"


@dataclass
class Sale:
    number: int
    wallet_id: str
    token_sha256: str
    tail: str
    moment: str = ""
    after_s: float = 0.0
    screen_at_pull: str = ""
    books_at_pull: int = 0
    boot_s: float | None = None  # the next boot's: QEMU's start to the kiosk's first screen
    ready_s: float | None = None  # ... to its amount screen after the recovery
    tries: int = 0  # the amount typed this many times before the sale started


def new_pass(sim: httpx.Client, number: int, camera: Path, work: Path) -> Sale:
    """A wallet of its own, its pass's QR code and the kiosk's config on the camera disk."""
    wallet_id = sim.post("/_sim/wallets", json={"balanceMNT": BALANCE}).json()["walletID"]
    token = sim.get(f"/_sim/wallets/{wallet_id}").json()["qrToken"]
    png, config = work / "pass.png", work / "config.toml"
    segno.make_qr(token, error="m").save(str(png), scale=6, border=4)
    config.write_text(CONFIG)
    if not camera.exists():
        subprocess.run(["truncate", "-s", "4M", str(camera)], check=True)
        subprocess.run(["mkfs.vfat", "-n", "QRCAM", str(camera)], check=True, capture_output=True)
    env = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}
    for file in (png, config):
        subprocess.run(["mcopy", "-o", "-i", str(camera), str(file), "::"], check=True, env=env)
    png.unlink()
    sha = hashlib.sha256(token.encode()).hexdigest()
    return Sale(number, wallet_id, sha, token[-4:])


def books(sim: httpx.Client, wallet_id: str) -> tuple[int, int]:
    """The wallet's charges in the sandbox's books, and how many of them were reversed."""
    rows = sim.get("/_sim/transactions").json()["transactions"]
    mine = [r for r in rows if r.get("walletID") == wallet_id and r.get("type") == "CHARGE"]
    return len(mine), sum(1 for r in mine if r.get("status") == "REVERSED")


def screen_now(boot: ib.Boot, since: int) -> str:
    """The last of SCREENS drawn after offset `since` ("typed" when none)."""
    text = boot.screen.text()[since:]
    found = [(text.rfind(words), name) for name, words in SCREENS.items() if words in text]
    return max(found)[1] if found else "typed"


def wait_screen(boot: ib.Boot, since: int, names: tuple[str, ...], patience: float) -> str:
    end = time.monotonic() + patience
    while time.monotonic() < end and boot.qemu.poll() is None:
        text = boot.screen.text()[since:]
        for name in names:
            if SCREENS[name] in text:
                return name
        time.sleep(0.05)
    return ""


def wait_ready(boot: ib.Boot, quiet: float, patience: float) -> float | None:
    """Seconds from QEMU's start to the amount screen of a kiosk that sells: drawn after
    the recovery screen (when the kiosk settled open sales first), or `quiet` seconds after
    the first amount screen with no recovery screen (nothing was open)."""
    end = time.monotonic() + patience
    first = time.monotonic()
    while time.monotonic() < end and boot.qemu.poll() is None:
        text = boot.screen.text()
        settling = text.rfind(SCREENS["recovering"])
        if settling >= 0 and text.find(SCREENS["amount"], settling) >= 0:
            return time.monotonic() - boot.started
        if settling < 0 and time.monotonic() - first > quiet:
            return time.monotonic() - boot.started
        time.sleep(0.2)
    return None


def start_sale(boot: ib.Boot, sale: Sale, sim: httpx.Client, patience: float) -> int:
    """Type the amount and Enter until the kiosk takes the sale (a kiosk still starting
    says so and keeps no amount); the screen's offset the sale started from."""
    end = time.monotonic() + patience
    while True:
        since = len(boot.screen.text())
        sale.tries += 1
        for key in f"/{AMOUNT}":  # "/" clears the amount; a key at a time, as a cashier
            boot.screen.send(key)
            time.sleep(0.15)
        boot.screen.send("\r")
        if sale.moment == "before the send" or time.monotonic() > end:
            return since
        names = ("waiting", "charging", "sending", "approved", "held")
        if wait_screen(boot, since, names, 20.0) or books(sim, sale.wallet_id)[0]:
            return since


def sell_and_pull(boot: ib.Boot, sale: Sale, sim: httpx.Client, patience: float) -> None:
    """Type the amount, press Enter, pull the plug at the sale's drawn moment."""
    if sale.moment == "in flight":
        sim.post("/_sim/faults", json={"kind": "delay", "operation": "charge", "seconds": HOLD_S})
    since = start_sale(boot, sale, sim, patience)
    if sale.moment == "in flight":
        shown = wait_screen(boot, since, ("charging", "sending", "held"), patience)
        if shown == "held":  # the pass was in view before the sale: charge it
            boot.screen.send("\r")
            wait_screen(boot, len(boot.screen.text()), ("charging", "sending"), patience)
    elif sale.moment == "after the 201":
        end = time.monotonic() + patience
        while books(sim, sale.wallet_id)[0] == 0 and time.monotonic() < end:
            if screen_now(boot, since) == "held":
                since = len(boot.screen.text())
                boot.screen.send("\r")
            time.sleep(0.05)
    time.sleep(sale.after_s)
    boot.pull()
    sale.screen_at_pull = screen_now(boot, since)
    sale.books_at_pull = books(sim, sale.wallet_id)[0]
    sim.delete("/_sim/faults")  # a hold not yet met must not slow the recovery


def draw_moments(rng: random.Random, pulls: int) -> list[tuple[str, float]]:
    """Each block of three pulls takes the three moments in a seeded order, each with a
    seeded delay within its moment's span."""
    span = {"before the send": 0.5, "in flight": 4.0, "after the 201": 0.3}
    moments: list[str] = []
    while len(moments) < pulls:
        moments += rng.sample(MOMENTS, len(MOMENTS))
    return [(m, round(rng.uniform(0.0, span[m]), 2)) for m in moments[:pulls]]


def read_ledger(overlay: Path, work: Path) -> list[tuple[str, str, int | None]]:
    """(token_sha256, state, charged) of every sale in the card's outbox."""
    fs, _ = ib.card_root(overlay, work, "the card's (after the last pull)")
    copy = work / "outbox.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        target = Path(f"{copy}{suffix}")
        target.unlink(missing_ok=True)
        subprocess.run(
            ["debugfs", "-R", f"dump {OUTBOX}{suffix} {target}", str(fs)],
            capture_output=True, check=True,
        )  # fmt: skip
        if target.exists() and target.stat().st_size == 0 and suffix:
            target.unlink()  # absent in the card (debugfs leaves an empty file)
    fs.unlink()
    with sqlite3.connect(copy) as db:
        rows = db.execute("SELECT token_sha256, state, charged FROM charge_intent").fetchall()
    return [(str(sha), str(state), charged) for sha, state, charged in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pulls", type=int, default=10)
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--arch", choices=("amd64", "arm64"), default="amd64")
    parser.add_argument("--image", type=Path, help="default /var/tmp/qrpos-image-trixie-ARCH.img")
    parser.add_argument("--accel", choices=("kvm", "tcg"))
    parser.add_argument(
        "--append", default="",
        help="more kernel command-line words, after the image's (the last root= wins)",
    )  # fmt: skip
    parser.add_argument("--patience", type=float, default=900.0, help="seconds to the kiosk")
    parser.add_argument("--card-size", default="4G")
    parser.add_argument(
        "--quiet", type=float, default=60.0,
        help="seconds after the first amount screen without a recovery screen: ready",
    )  # fmt: skip
    parser.add_argument(
        "--stop-by", metavar="HH:MM",
        help="UTC: from the second pull on, start none whose boot would end after it",
    )  # fmt: skip
    args = parser.parse_args()
    args.image = args.image or Path(f"/var/tmp/qrpos-image-trixie-{args.arch}.img")
    args.accel = args.accel or ib.default_accel(args.arch)
    for tool in ("qemu-img", "sfdisk", "mcopy", "mkfs.vfat", "debugfs", "e2fsck", "socat"):
        if shutil.which(tool) is None:
            print(f"image_pulls.py: {tool} not found (docs/installing.md, Card images)")
            return 2
    if not args.image.exists():
        print(
            f"image_pulls.py: no image {args.image}: sudo deploy/image/build.sh --arch {args.arch}"
        )
        return 2
    moments = draw_moments(random.Random(args.seed), args.pulls)
    stop_by = float("inf")
    if args.stop_by:
        hours, minutes = map(int, args.stop_by.split(":"))
        now = time.gmtime()
        stop_by = time.time() + (hours * 60 + minutes - now.tm_hour * 60 - now.tm_min) * 60
    simulator = subprocess.Popen(
        [sys.executable, "-c", "from qrpos.cli import main; main()", "simulator",
         "--host", "127.0.0.1", "--port", "0", "--no-rate-limit"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    sales: list[Sale] = []
    first_boot: float | None = None
    try:
        assert simulator.stdout is not None
        url = simulator.stdout.readline().strip()
        ib.check("sandbox service on the loopback", url.startswith("http://127.0.0.1:"), url)
        port = int(url.rsplit(":", 1)[1])
        with (
            httpx.Client(base_url=url, timeout=30) as sim,
            tempfile.TemporaryDirectory(prefix="qrpos-image-pulls-", dir="/var/tmp") as tmp,
        ):
            work = Path(tmp)
            print(
                f"== {args.pulls} plug pulls mid-sale: {args.image.name} under "
                f"{args.accel.upper()}, seed {args.seed}, {args.card_size} card",
                flush=True,
            )
            overlay, camera = work / "card.qcow2", work / "camera.img"
            ib.make_overlay(args.image, overlay, args.card_size)
            terminal = sim.post("/_sim/terminals", json={"merchant": "m_pulls"}).json()
            credentials = ib.pair_credentials(args.arch, terminal, work)
            drive = (
                "-drive",
                f"file={camera},if=none,id=camera,format=raw",
                "-device",
                "virtio-blk-pci,drive=camera,serial=qrcam",
            )
            sale = new_pass(sim, 1, camera, work)
            boot = ib.start_boot(args, overlay, "0", work, port, credentials, CAMERA_APPEND, drive)
            first_boot = ib.wait_kiosk(boot, args.patience)
            ib.check("the first boot reaches the kiosk", first_boot is not None,
                     f"{first_boot or float('nan'):.1f} s under {args.accel}")  # fmt: skip
            ready = wait_ready(boot, args.quiet, args.patience) if first_boot else None
            cycle = time.monotonic() - boot.started
            for number, (moment, after_s) in enumerate(moments, start=1):
                if ready is None or boot.qemu.poll() is not None:
                    break
                # (the first boot, with its first-boot work and pairing, is no measure)
                if number > 1 and time.time() + cycle > stop_by:
                    print(f"      --stop-by {args.stop_by}: no pull {number} (a boot takes "
                          f"{cycle:.0f} s)", flush=True)  # fmt: skip
                    break
                sale.moment, sale.after_s = moment, after_s
                sell_and_pull(boot, sale, sim, args.patience)
                sales.append(sale)
                print(
                    f"      pull {number}: {sale.moment}, +{sale.after_s:.2f} s (amount typed "
                    f"{sale.tries}x); the screen showed {sale.screen_at_pull!r}, the books "
                    f"{sale.books_at_pull} charge(s)",
                    flush=True,
                )
                # the next wallet's pass (after the last pull, one no sale is typed for)
                sale = new_pass(sim, number + 1, camera, work)
                boot = ib.start_boot(
                    args, overlay, str(number), work, port, credentials, CAMERA_APPEND, drive
                )
                sales[-1].boot_s = ib.wait_kiosk(boot, args.patience)
                ready = sales[-1].ready_s = (
                    wait_ready(boot, args.quiet, args.patience) if sales[-1].boot_s else None
                )
                cycle = time.monotonic() - boot.started
                print(
                    f"      boot {number} after the pull: first screen "
                    + (f"{sales[-1].boot_s:.1f} s" if sales[-1].boot_s else "NOT reached")
                    + (f", ready to sell {ready:.1f} s" if ready else ", NOT ready to sell"),
                    flush=True,
                )
            boot.pull()
            ledger = read_ledger(overlay, work)
            report(args, sales, ledger, sim, first_boot)
            if ib.failed:
                keep_evidence(work, args.seed)
    finally:
        simulator.terminate()
        simulator.wait(timeout=30)
    print("RESULT: FAILED" if ib.failed else "RESULT: ok")
    return 1 if ib.failed else 0


def keep_evidence(work: Path, seed: int) -> None:
    """A failed run keeps what a person reads to learn why: every boot's console, the
    kiosk's screen socket log and QEMU's errors, outside the folder the run deletes (the
    card's overlay stays behind: gigabytes, and its ledger is in the report)."""
    kept = Path("/var/tmp") / f"qrpos-image-pulls-failed-seed{seed}-{int(time.time())}"
    kept.mkdir(parents=True, exist_ok=True)
    for path in sorted(work.iterdir()):
        if path.suffix in (".log", ".err") and path.is_file():
            shutil.copy2(path, kept / path.name)
    print(f"      kept the consoles and QEMU's errors in {kept}", flush=True)


def report(
    args: argparse.Namespace,
    sales: list[Sale],
    ledger: list[tuple[str, str, int | None]],
    sim: httpx.Client,
    first_boot: float | None,
) -> None:
    charged = not_charged = review = doubles = recovered = 0
    for sale in sales:
        charges, refunds = books(sim, sale.wallet_id)
        intents = [(state, paid) for sha, state, paid in ledger if sha == sale.token_sha256]
        verdict = judge(charges, refunds, intents)
        balance = sim.get(f"/_sim/wallets/{sale.wallet_id}").json()["balanceMNT"]
        right = balance == BALANCE - AMOUNT * (charges - refunds)
        recovered += sale.ready_s is not None
        charged += verdict.outcome.startswith("charged") and verdict.ok
        not_charged += verdict.outcome in ("not charged", "not stored")
        review += verdict.outcome.startswith("in review")
        doubles += verdict.double
        boot = (
            f"first screen {sale.boot_s:.1f} s, ready {sale.ready_s:.1f} s"
            if sale.boot_s and sale.ready_s
            else "not ready"
        )
        ib.check(
            f"pull {sale.number:2}: {sale.moment:15} +{sale.after_s:.2f} s",
            verdict.ok and right and sale.ready_s is not None,
            f"{verdict.outcome}; pass …{sale.tail}, books {charges} charge(s), balance "
            f"{balance}{'' if right else ' WRONG'}; ledger {[s for s, _ in intents]}; "
            f"screen at the pull {sale.screen_at_pull!r}; next boot: {boot}",
        )
    firsts = [s.boot_s for s in sales if s.boot_s is not None]
    readies = [s.ready_s for s in sales if s.ready_s is not None]
    ib.check("no wallet charged twice", doubles == 0, f"{doubles} double charge(s)")
    ib.check("every boot after a pull came back ready to sell", recovered == len(sales),
             f"{recovered} of {len(sales)} ({args.pulls} asked)")  # fmt: skip

    def spread(values: list[float]) -> str:
        if not values:
            return "none"
        return f"median {statistics.median(values):.1f} s, max {max(values):.1f} s"

    print(
        f"SUMMARY: {len(sales)} pulls under {args.accel} (seed {args.seed}), {recovered} boots "
        f"recovered; sales {charged} charged, {not_charged} not charged, {review} in review "
        f"(a person decides), {doubles} double charges; after a pull, the kiosk's first "
        f"screen {spread(firsts)}, ready to sell {spread(readies)}; first boot (with pairing) "
        f"{first_boot or float('nan'):.1f} s",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
