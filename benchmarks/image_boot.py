"""Boot a card image (deploy/image/build.sh) under full-system emulation to the kiosk, and
print the boot-to-screen time.

    sudo python benchmarks/image_boot.py [--image FILE] [--arch amd64|arm64]
                                         [--patience S] [--card-size 4G] [--cards N]
                                         [--accel kvm|tcg] [--append WORDS]

What is real: the image as build.sh made it (its kernel, initrd and command line from the
boot partition), a first boot with an empty machine-id (the card grows its root, makes
its host keys and machine-id), the unit as install.sh wrote it, provision.sh pairing the
till with the sandbox service (`qrpos simulator`, on this machine's loopback) and the
kiosk's first screen. The network is QEMU's user network with `restrict=on`: the guest
reaches one address, 10.0.2.100:8080, forwarded (guestfwd) to the sandbox on 127.0.0.1,
and nothing else (no DNS, NTP or apt out of this machine). The kiosk refuses plain http
to anything but a loopback address, so in the card 127.0.0.1:8080 is forwarded there
(`qrpos.sandbox=10.0.2.100:8080` on the kernel command line: systemd-socket-proxyd).

What stands in: the Pi's firmware (QEMU loads the kernel and initrd from the boot
partition: -kernel/-initrd), a screen (the kiosk is moved to the second serial port by
`qrpos.tty=ttyS1`, deploy/image/qrpos-console-generator, on arm64's `-M virt` to a
virtio console, hvc0; the first serial port carries the boot log), and the installer
typing the service's URL, username and password: they are handed to the machine as
systemd system credentials (SMBIOS type 11 on amd64, fw_cfg on arm64: root-only in the
guest), which qrpos-pair-credential.service gives to provision.sh. --accel: KVM with two
virtual CPUs where /dev/kvm opens for a guest of this machine's arch (not kvm-pvm), else
TCG with one (the machine is shared); every figure printed says which. Each boot runs on
a copy-on-write overlay of the image, as large as --card-size: the image itself is never
written.

After the kiosk is up, QEMU is stopped (a plug pull) and the overlay is read without
booting (e2fsck replays its journal first): the root partition grew to the card, the
machine-id and host keys exist. With --cards 2 the same image boots twice, as two cards
would: their machine-ids and host keys must differ.

Prints one line per check and the figures; exits 1 if a check failed. Needs root only to
read the overlay's file system (qemu-nbd is not used: qemu-img convert to a sparse file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
GUEST_SERVICE = ("10.0.2.100", 8080)
#: the sandbox as the kiosk sees it: its own loopback, forwarded to GUEST_SERVICE by
#: `qrpos.sandbox=` (deploy/image/qrpos-console-generator; plain http goes to loopback only)
GUEST_BASE_URL = "http://127.0.0.1:8080"
#: the kiosk's first screen, in either language (src/qrpos/present/locales/*/kiosk.toml)
KIOSK_TITLES = ("Enter the amount", "Дүн оруулна уу")
_ESCAPES = re.compile(
    r"\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78cM]"
)

failed = False


def check(name: str, ok: bool, detail: str = "") -> None:
    global failed
    print(f"{'ok  ' if ok else 'FAIL'}  {name}" + (f": {detail}" if detail else ""), flush=True)
    failed = failed or not ok


@dataclass
class Serial:
    """A serial port's output, read as it comes (a unix socket QEMU serves)."""

    path: Path
    data: bytearray = field(default_factory=bytearray)
    sock: socket.socket | None = None

    def connect(self, patience: float) -> None:
        deadline = time.monotonic() + patience
        while True:
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(self.path))
                break
            except OSError:
                sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock = sock
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.sock is not None
        while chunk := self.sock.recv(65536):
            self.data += chunk

    def text(self) -> str:
        return _ESCAPES.sub("", bytes(self.data).decode("utf-8", "replace"))

    def send(self, text: str) -> None:
        assert self.sock is not None
        self.sock.sendall(text.encode())


def boot_files(image: Path, into: Path) -> tuple[Path, Path, str]:
    """The kernel, initrd and command line from the image's boot partition (mtools)."""
    table = json.loads(
        subprocess.run(
            ["sfdisk", "--json", str(image)], capture_output=True, text=True, check=True
        ).stdout
    )["partitiontable"]
    offset = int(table["partitions"][0]["start"]) * int(table.get("sectorsize", 512))
    env = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}
    for name in ("vmlinuz", "initrd.img", "cmdline.txt"):
        subprocess.run(
            ["mcopy", "-o", "-i", f"{image}@@{offset}", f"::{name}", str(into / name)],
            check=True,
            env=env,
        )
    return into / "vmlinuz", into / "initrd.img", (into / "cmdline.txt").read_text().strip()


def qemu_command(
    arch: str,
    kernel: Path,
    initrd: Path,
    cmdline: str,
    disk: Path,
    console: Path,
    kiosk: Path,
    credentials: list[str],
    sandbox_port: int,
    accel: str = "tcg",
    extra_append: str = "",
) -> list[str]:
    # one connection per guest connection (cmd:), each to the sandbox on the loopback
    forward = (
        f"guestfwd=tcp:{GUEST_SERVICE[0]}:{GUEST_SERVICE[1]}"
        f"-cmd:socat STDIO TCP:127.0.0.1:{sandbox_port}"
    )
    if arch == "amd64":
        cpu = "host" if accel == "kvm" else "max"
        base = ["qemu-system-x86_64", "-machine", "q35", "-cpu", cpu]
        ttys = ("ttyS0", "ttyS1")
    else:
        base = ["qemu-system-aarch64", "-machine", "virt", "-cpu", "cortex-a72"]
        ttys = ("ttyAMA0", "hvc0")
        # the Pi's consoles in raspi-firmware's cmdline.txt (serial0, tty0/tty1) are not
        # on virt: its UART (ttyAMA0) takes the boot log instead
        cmdline = " ".join(w for w in cmdline.split() if not w.startswith("console="))
    append = (
        f"{cmdline.replace('console=tty1', '')} console={ttys[0]},115200 qrpos.tty={ttys[1]}"
        f" qrpos.sandbox={GUEST_SERVICE[0]}:{GUEST_SERVICE[1]} {extra_append}"
    )
    argv = [
        *base,
        "-accel",
        accel,
        "-smp",
        "2" if accel == "kvm" else "1",
        "-m",
        "1024",
        "-nographic",
        "-no-reboot",
        "-kernel",
        str(kernel),
        "-initrd",
        str(initrd),
        "-append",
        " ".join(append.split()),
        "-drive",
        f"file={disk},if=virtio,format=qcow2,cache=unsafe",
        "-nic",
        f"user,model=virtio-net-pci,restrict=on,{forward}",
        "-chardev",
        f"file,id=console,path={console}",
        "-serial",
        "chardev:console",
        "-chardev",
        f"socket,id=kiosk,path={kiosk},server=on,wait=off",
        "-monitor",
        "none",
    ]
    if arch == "amd64":
        argv += ["-serial", "chardev:kiosk"]
    else:  # virt has one UART: the kiosk on a virtio console (hvc0)
        argv += ["-device", "virtio-serial-pci", "-device", "virtconsole,chardev=kiosk"]
    return argv + credentials


@dataclass
class Card:
    machine_id: str
    host_keys: str
    root_sectors: int
    disk_sectors: int


def card_root(overlay: Path, work: Path, what: str = "the card's") -> tuple[Path, dict[str, int]]:
    """The overlay's root file system as a file of its own, its journal replayed by e2fsck
    as a booting card would (checked: clean); and the partition's and the disk's sizes."""
    raw = work / "card.raw"
    subprocess.run(["qemu-img", "convert", "-O", "raw", str(overlay), str(raw)], check=True)
    table = json.loads(
        subprocess.run(
            ["sfdisk", "--json", str(raw)], capture_output=True, text=True, check=True
        ).stdout
    )["partitiontable"]
    root_part = table["partitions"][1]
    # the root partition on its own (e2fsck forgets an ?offset= when it reopens the file
    # system after replaying the journal)
    fs = work / "card-root.ext4"
    start, size = int(root_part["start"]) * 512, int(root_part["size"]) * 512
    subprocess.run(
        ["dd", f"if={raw}", f"of={fs}", "bs=4M", f"skip={start}", f"count={size}",
         "iflag=skip_bytes,count_bytes", "conv=sparse", "status=none"],
        check=True,
    )  # fmt: skip
    sizes = {"root_sectors": int(root_part["size"]), "disk_sectors": raw.stat().st_size // 512}
    raw.unlink()
    # -p: the automatic repair of a boot (journal replay); exit 0 or 1 is a clean file system
    fsck = subprocess.run(["e2fsck", "-p", str(fs)], capture_output=True, text=True)
    check(
        f"{what} file system is clean after the plug pull",
        fsck.returncode in (0, 1),
        (fsck.stdout + fsck.stderr).strip()[-300:],
    )
    return fs, sizes


def debugfs_cat(fs: Path, path: str) -> str:
    return subprocess.run(
        ["debugfs", "-R", f"cat {path}", str(fs)], capture_output=True, text=True
    ).stdout


def read_card(overlay: Path, work: Path) -> Card:
    """The booted card's disk, read without booting: e2fsck replays the journal of a card
    whose plug was pulled, then debugfs reads the files."""
    fs, sizes = card_root(overlay, work)
    keys = "".join(
        debugfs_cat(fs, f"/etc/ssh/ssh_host_{kind}_key.pub") for kind in ("ed25519", "rsa")
    )
    card = Card(
        machine_id=debugfs_cat(fs, "/etc/machine-id").strip(),
        host_keys=hashlib.sha256(keys.encode()).hexdigest()[:12] if keys.strip() else "",
        **sizes,
    )
    fs.unlink()
    return card


def make_overlay(image: Path, overlay: Path, size: str) -> None:
    """A copy-on-write card of `size` over the image (the image is never written)."""
    subprocess.run(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image.resolve()), "-F", "raw",
         str(overlay), size],
        check=True,
    )  # fmt: skip


def pair_credentials(arch: str, terminal: dict[str, str], work: Path) -> list[str]:
    """The installer's three answers, as system credentials (files: never on a command
    line): SMBIOS type 11 strings on amd64; on arm64's virt, whose direct kernel boot has
    no SMBIOS, QEMU's fw_cfg (systemd reads both)."""
    credentials = []
    for name, value in (
        ("base_url", GUEST_BASE_URL),
        ("username", terminal["username"]),
        ("password", terminal["password"]),
    ):
        path = work / f"cred-{name}"
        path.touch(mode=0o600)
        if arch == "amd64":
            path.write_text(f"io.systemd.credential:qrpos.pair.{name}={value}")
            credentials += ["-smbios", f"type=11,path={path}"]
        else:
            path.write_text(value)
            fw_cfg = f"name=opt/io.systemd.credentials/qrpos.pair.{name},file={path}"
            credentials += ["-fw_cfg", fw_cfg]
    return credentials


@dataclass
class Boot:
    """One boot of a card under QEMU: its process, the kiosk's tty and the marks reached
    (seconds from QEMU's start)."""

    qemu: subprocess.Popen[bytes]
    screen: Serial
    console: Path
    started: float
    marks: dict[str, float] = field(default_factory=dict)

    def pull(self) -> None:
        """The plug pulled: SIGKILL, no shutdown of any kind."""
        self.qemu.kill()
        self.qemu.wait()


MILESTONES = {
    "kernel": "Linux version",
    "systemd": "Welcome to",
    "first boot": "qrpos-firstboot: SSH host keys",
    "paired": "kiosk (re)started",
}


def start_boot(
    args: argparse.Namespace,
    overlay: Path,
    tag: str,
    work: Path,
    sandbox_port: int,
    credentials: list[str],
    extra_append: str = "",
    extra_args: tuple[str, ...] = (),
) -> Boot:
    """QEMU started on `overlay`, the kiosk's tty connected."""
    kernel, initrd, cmdline = boot_files(args.image, work)
    console, kiosk = work / f"console{tag}.log", work / f"kiosk{tag}.sock"
    argv = qemu_command(
        args.arch, kernel, initrd, cmdline, overlay, console, kiosk, credentials,
        sandbox_port, args.accel, f"{getattr(args, 'append', '')} {extra_append}",
    )  # fmt: skip
    started = time.monotonic()
    with open(work / f"qemu{tag}.err", "w") as errors:  # QEMU keeps its own copy
        qemu = subprocess.Popen(
            [*argv, *extra_args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=errors,
        )  # fmt: skip
    boot = Boot(qemu, Serial(kiosk), console, started)
    try:
        boot.screen.connect(30)
    except OSError:
        boot.pull()
        print("      QEMU:", (work / f"qemu{tag}.err").read_text()[-600:])
        raise
    return boot


def wait_kiosk(boot: Boot, patience: float) -> float | None:
    """Seconds from QEMU's start to the kiosk's amount screen, or None (the console's last
    lines printed)."""
    deadline = boot.started + patience
    while time.monotonic() < deadline and boot.qemu.poll() is None:
        log = boot.console.read_text(errors="replace") if boot.console.exists() else ""
        for mark, text in MILESTONES.items():
            if mark not in boot.marks and text in log:
                boot.marks[mark] = time.monotonic() - boot.started
        if any(title in boot.screen.text() for title in KIOSK_TITLES):
            boot.marks["kiosk"] = time.monotonic() - boot.started
            return boot.marks["kiosk"]
        time.sleep(0.2)
    log = boot.console.read_text(errors="replace") if boot.console.exists() else ""
    print("      console (last lines):")
    print("\n".join("      | " + line for line in log.splitlines()[-25:]))
    print("      kiosk tty (last):", boot.screen.text()[-400:].replace("\n", " | "))
    return None


def boot_card(
    args: argparse.Namespace, number: int, sandbox_url: str, sim: httpx.Client, work: Path
) -> Card | None:
    print(
        f"== card {number}: {args.image.name} under {args.accel.upper()} ({args.arch}), "
        f"{args.card_size} card",
        flush=True,
    )
    overlay = work / f"card{number}.qcow2"
    make_overlay(args.image, overlay, args.card_size)
    terminal = sim.post("/_sim/terminals", json={"merchant": f"m_image{number}"}).json()
    credentials = pair_credentials(args.arch, terminal, work)
    port = int(sandbox_url.rsplit(":", 1)[1])
    boot = start_boot(args, overlay, str(number), work, port, credentials)
    try:
        kiosk = wait_kiosk(boot, args.patience)
        shown = ", ".join(f"{k} {v:.1f} s" for k, v in boot.marks.items())
        check(
            "the kiosk's first screen on the serial console", kiosk is not None, shown or "nothing"
        )
        if kiosk is not None:
            time.sleep(args.settle)  # the kiosk running: watchdog pings, the journal written
    finally:
        boot.pull()
    ran = time.monotonic() - boot.started
    print(
        f"      boot-to-kiosk: {boot.marks.get('kiosk', float('nan')):.1f} s "
        f"under {args.accel} (QEMU ran {ran:.0f} s; console log {boot.console})",
        flush=True,
    )
    if kiosk is None:
        return None
    card = read_card(overlay, work)
    check(
        "the root partition grew to the card",
        card.disk_sectors - card.root_sectors < 600_000,
        f"root {card.root_sectors >> 11} MiB of a {card.disk_sectors >> 11} MiB card",
    )
    check("a machine-id of its own", re.fullmatch(r"[0-9a-f]{32}", card.machine_id) is not None)
    check("SSH host keys of its own", card.host_keys != "")
    overlay.unlink()
    return card


def default_accel(arch: str) -> str:
    """kvm when /dev/kvm opens and the guest is this machine's arch, else tcg. Not on a
    kvm-pvm host (a nested "pagetable VM"): it runs kernels built as PVM guests only; a
    stock Debian kernel showed nothing after SeaBIOS there, or failed in its
    decompressor's BMI2 code ("KVM internal error ... emulation failure"; docs/installing.md,
    Card images)."""
    native = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine)
    if native != arch or Path("/sys/module/kvm_pvm").exists():
        return "tcg"
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError:
        return "tcg"
    return "kvm"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=("amd64", "arm64"), default="amd64")
    parser.add_argument("--image", type=Path, help="default /var/tmp/qrpos-image-trixie-ARCH.img")
    parser.add_argument("--patience", type=float, default=900.0, help="seconds to the kiosk")
    parser.add_argument("--card-size", default="4G", help="the card the image is flashed to")
    parser.add_argument("--cards", type=int, default=1, help="boot the image as N cards")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds kept running")
    parser.add_argument(
        "--append",
        default="",
        help="more kernel command-line words, after the image's (the last root= wins)",
    )
    parser.add_argument(
        "--accel",
        choices=("kvm", "tcg"),
        help="default: kvm when /dev/kvm opens for a guest of this machine's arch, else tcg",
    )
    args = parser.parse_args()
    args.image = args.image or Path(f"/var/tmp/qrpos-image-trixie-{args.arch}.img")
    args.accel = args.accel or default_accel(args.arch)
    for tool in ("qemu-img", "sfdisk", "mcopy", "debugfs", "e2fsck", "socat"):
        if shutil.which(tool) is None:
            print(f"image_boot.py: {tool} not found (docs/installing.md, Card images)")
            return 2
    if not args.image.exists():
        print(
            f"image_boot.py: no image {args.image}: sudo deploy/image/build.sh --arch {args.arch}"
        )
        return 2
    simulator = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from qrpos.cli import main; main()",
            "simulator",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-rate-limit",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    cards: list[Card] = []
    try:
        assert simulator.stdout is not None
        url = simulator.stdout.readline().strip()
        check("sandbox service on the loopback", url.startswith("http://127.0.0.1:"), url)
        with (
            httpx.Client(base_url=url, timeout=30) as sim,
            tempfile.TemporaryDirectory(prefix="qrpos-image-boot-", dir="/var/tmp") as tmp,
        ):
            for number in range(1, args.cards + 1):
                card = boot_card(args, number, url, sim, Path(tmp))
                if card is not None:
                    cards.append(card)
            if args.cards > 1 and len(cards) == args.cards:
                check(
                    "two cards from one image, two identities",
                    len({c.machine_id for c in cards}) == len(cards)
                    and len({c.host_keys for c in cards}) == len(cards),
                )
    finally:
        simulator.terminate()
        simulator.wait(timeout=30)
    print("RESULT: FAILED" if failed else "RESULT: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
