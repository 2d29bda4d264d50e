"""deploy/image: a card image carries nothing that must differ between two cards (the
machine-id, SSH host keys) and nothing secret (a terminal credential, a manager PIN, a
till's state), and the kiosk can be moved to a serial console only by name.

Two levels, both without booting anything:
- customize.sh (the step of build.sh that makes a root a card) on a small root made
  here, planted with everything a build machine or an earlier pairing could leave:
  always runs, in well under a second;
- a built image (deploy/image/build.sh; QRPOS_IMAGE=path, else the builder's default
  /var/tmp/qrpos-image-*.img), read in place with debugfs and mtools. Building one takes
  minutes and the network (docs/installing.md), more than the suite's budget: where no
  image is present these tests are skipped, and say so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE_DIR = ROOT / "deploy" / "image"
CUSTOMIZE = IMAGE_DIR / "customize.sh"
GENERATOR = IMAGE_DIR / "qrpos-console-generator"
ROOT_LABEL = "qrpos-root"
BOOT_LABEL = "QRPOS-BOOT"

#: what an install, a pairing or the build machine leaves in a root: each must be gone
PLANTED = {
    "etc/machine-id": "0123456789abcdef0123456789abcdef\n",
    "var/lib/dbus/machine-id": "0123456789abcdef0123456789abcdef\n",
    "var/lib/systemd/random-seed": "seed",
    "var/lib/systemd/credential.secret": "host key of the credentials",
    "etc/ssh/ssh_host_ed25519_key": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "etc/ssh/ssh_host_ed25519_key.pub": "ssh-ed25519 AAAA builder",
    "etc/ssh/ssh_host_rsa_key": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "etc/credstore.encrypted/qrpos-password": "encrypted terminal password",
    "var/lib/qrpos/outbox.sqlite3": "sales",
    "var/lib/qrpos/machine.json": '{"till": "t_builder"}',
    "var/lib/qrpos/terminal.toml": 'username = "term_builder"',
    "var/lib/qrpos/manager.pin": "pin digest",
    "etc/host-ca-certificates.crt": "the build machine's CA bundle",
    "root/.cache/pip/http/0": "pip cache",
    "var/log/apt/term.log": "install log",
}
#: what the card needs, left as it was
KEPT = {
    "etc/qrpos/config.toml": 'state_dir = "/var/lib/qrpos"\nlanguage = "mn"\n',
    "etc/ssh/sshd_config": "# sshd\n",
}


def _fake_root(base: Path) -> Path:
    root = base / "root"
    for rel, text in {**PLANTED, **KEPT}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel in ("boot/firmware", "etc/systemd/system", "usr/local/sbin", "tmp", "var/tmp"):
        (root / rel).mkdir(parents=True, exist_ok=True)
    (root / "boot" / "vmlinuz-6.12.0-1-amd64").write_bytes(b"kernel")
    (root / "boot" / "initrd.img-6.12.0-1-amd64").write_bytes(b"initrd")
    return root


def test_customize_leaves_no_identity_and_no_secret(tmp_path: Path) -> None:
    root = _fake_root(tmp_path)
    result = subprocess.run(
        ["bash", str(CUSTOMIZE), str(root), "amd64", ROOT_LABEL, BOOT_LABEL],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    # an empty machine-id (not a missing one: systemd then makes one on the first boot)
    assert (root / "etc/machine-id").read_text() == ""
    left = [rel for rel in PLANTED if rel != "etc/machine-id" and (root / rel).exists()]
    assert left == [] or left == ["var/log/apt/term.log"], left
    assert (root / "var/log/apt/term.log").read_text() == ""
    assert list((root / "etc/ssh").glob("ssh_host_*")) == []
    assert list((root / "var/lib/qrpos").iterdir()) == []
    assert list((root / "etc/credstore.encrypted").iterdir()) == []
    for rel, text in KEPT.items():
        assert (root / rel).read_text() == text
    # the boot partition's files, naming the root by the label build.sh gives it
    firmware = root / "boot/firmware"
    assert (firmware / "vmlinuz").read_bytes() == b"kernel"
    assert (firmware / "initrd.img").read_bytes() == b"initrd"
    assert f"root=LABEL={ROOT_LABEL} " in (firmware / "cmdline.txt").read_text()
    fstab = (root / "etc/fstab").read_text()
    assert f"LABEL={ROOT_LABEL}  /  " in fstab and f"LABEL={BOOT_LABEL}  /boot/firmware " in fstab
    wants = root / "etc/systemd/system/multi-user.target.wants"
    assert sorted(p.name for p in wants.iterdir()) == [
        "qrpos-firstboot.service",
        "qrpos-pair-credential.service",
    ]


def test_an_installers_public_key_is_roots_only_login(tmp_path: Path) -> None:
    root = _fake_root(tmp_path)
    key = tmp_path / "installer.pub"
    key.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample installer@laptop\n")
    subprocess.run(
        ["bash", str(CUSTOMIZE), str(root), "amd64", ROOT_LABEL, BOOT_LABEL, str(key)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    authorized = root / "root/.ssh/authorized_keys"
    assert authorized.read_text() == key.read_text()
    assert authorized.stat().st_mode & 0o777 == 0o600
    assert list((root / "etc/ssh").glob("ssh_host_*")) == []


LOCK = ROOT / "deploy" / "requirements.lock"


def _lock_for(python: str, machine: str) -> dict[str, list[str]]:
    """lock_for.py's output: each requirement with its hash lines."""
    result = subprocess.run(
        [sys.executable, str(IMAGE_DIR / "lock_for.py"), str(LOCK), python, machine],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    entries: dict[str, list[str]] = {}
    last = ""
    for line in result.stdout.splitlines():
        if line.startswith(" "):
            entries[last].append(line.strip().removesuffix(" \\"))
        else:
            assert line.endswith(" \\") and ";" not in line, line
            last = line.removesuffix(" \\")
            entries[last] = []
    return entries


@pytest.mark.parametrize(
    ("python", "numpy", "opencv"),
    [("3.13", "2.2.4", "4.14.0.94"), ("3.11", "1.24.2", "4.8.1.78")],
)
def test_the_wheelhouse_lock_is_the_cards_python_not_the_hosts(
    python: str, numpy: str, opencv: str
) -> None:
    """build.sh downloads the card's wheels on the host with `pip download --python-version`,
    which evaluates the lock's markers for the host's Python: lock_for.py evaluates them for
    the card's (a Trixie card needs numpy 2.2.4 whatever Python builds it)."""
    entries = _lock_for(python, "aarch64")
    assert f"numpy=={numpy}" in entries
    assert f"opencv-python-headless=={opencv}" in entries
    assert len([e for e in entries if e.startswith("numpy==")]) == 1
    assert not [e for e in entries if e.startswith(("pywin32-ctypes", "colorama"))]
    assert ("zipp==4.1.2" in entries) == (python == "3.11")
    lock = LOCK.read_text()
    for requirement, hashes in entries.items():
        # every entry keeps every hash the lock gives it: pip still refuses any other file
        assert hashes, requirement
        assert all(h.startswith("--hash=sha256:") and h in lock for h in hashes)
    # the last hash line of each entry ends it (no continuation into the next requirement)
    text = subprocess.run(
        [sys.executable, str(IMAGE_DIR / "lock_for.py"), str(LOCK), python, "aarch64"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert not re.search(r"--hash=\S+ \\\n[a-z]", text)


PI_GEN_STAGE = IMAGE_DIR / "pi-gen" / "stage-qrpos"


def test_the_pi_gen_stage_installs_this_checkout_and_scrubs_the_root(tmp_path: Path) -> None:
    """pi-gen's host-side steps on a root (its chroot step is install.sh --image-build,
    run in real Debian roots by benchmarks/install_in_root.sh)."""
    root = _fake_root(tmp_path)
    env = {**os.environ, "ROOTFS_DIR": str(root)}
    steps = sorted((PI_GEN_STAGE / "00-qrpos").iterdir())
    assert [s.name for s in steps] == ["00-run.sh", "01-run-chroot.sh", "02-run.sh"]
    assert "deploy/install.sh --image-build" in steps[1].read_text()
    for step in (steps[0], steps[2]):
        done = subprocess.run(["bash", str(step)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    installed = root / "opt/qrpos-src"
    # the committed files (git archive HEAD), install.sh and the unit among them
    assert (installed / "deploy/install.sh").stat().st_size > 0
    assert (installed / "systemd/qrpos.service").stat().st_size > 0
    assert (root / "etc/machine-id").read_text() == ""
    assert list((root / "etc/ssh").glob("ssh_host_*")) == []
    assert list((root / "var/lib/qrpos").iterdir()) == []
    assert not (root / "etc/credstore.encrypted/qrpos-password").exists()
    assert (PI_GEN_STAGE / "EXPORT_IMAGE").exists()


def _generate(tmp_path: Path, cmdline: str) -> Path:
    out = tmp_path / "generator"
    out.mkdir()
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    subprocess.run(
        ["sh", str(GENERATOR), str(out), str(out), str(out)],
        env={**os.environ, "QRPOS_CMDLINE": str(tmp_path / "cmdline")},
        check=True,
        capture_output=True,
        timeout=10,
    )
    return out / "qrpos.service.d" / "console.conf"


def test_the_kiosk_moves_to_a_serial_console_only_when_named(tmp_path: Path) -> None:
    drop_in = _generate(tmp_path, "root=LABEL=qrpos-root rw console=ttyS0 qrpos.tty=ttyS0")
    text = drop_in.read_text()
    assert "TTYPath=/dev/ttyS0\n" in text and "DeviceAllow=/dev/ttyS0 rw\n" in text
    assert "Conflicts=serial-getty@ttyS0.service\n" in text


@pytest.mark.parametrize(
    "cmdline",
    ["root=LABEL=qrpos-root rw", "qrpos.tty=tty1", "qrpos.tty=../../etc/x0", "qrpos.tty=sda1"],
)
def test_no_console_drop_in_otherwise(tmp_path: Path, cmdline: str) -> None:
    drop_in = _generate(tmp_path, cmdline)
    assert not drop_in.exists()
    assert list(drop_in.parents[1].iterdir()) == []  # nothing else generated either


def test_a_named_sandbox_is_reached_on_the_cards_loopback(tmp_path: Path) -> None:
    drop_in = _generate(tmp_path, "rw qrpos.sandbox=10.0.2.100:8080")
    generated = drop_in.parents[1]
    assert "ListenStream=127.0.0.1:8080\n" in (generated / "qrpos-sandbox.socket").read_text()
    service = (generated / "qrpos-sandbox.service").read_text()
    assert "ExecStart=/usr/lib/systemd/systemd-socket-proxyd 10.0.2.100:8080\n" in service
    assert (generated / "sockets.target.wants" / "qrpos-sandbox.socket").is_symlink()


@pytest.mark.parametrize("word", ["10.0.2.100", "host:80", "1.2.3.4:80;rm", ":80", "1:2:3"])
def test_no_sandbox_forward_for_anything_but_addr_port(tmp_path: Path, word: str) -> None:
    generated = _generate(tmp_path, f"rw qrpos.sandbox={word}").parents[1]
    assert list(generated.iterdir()) == []


# --- a built image, read without booting -------------------------------------------------


def _images() -> list[Path]:
    named = os.environ.get("QRPOS_IMAGE")
    if named:
        return [Path(p) for p in named.split(os.pathsep)]
    return sorted(Path("/var/tmp").glob("qrpos-image-*.img"))


IMAGES = _images()
NO_IMAGE = (
    "no card image here (QRPOS_IMAGE or /var/tmp/qrpos-image-*.img): building one takes "
    "minutes and the network, beyond the suite's budget; sudo deploy/image/build.sh "
    "--arch amd64 --suite trixie, then run this file"
)


class Image:
    """A card image's two partitions, read in place (debugfs, mtools): no mount, no root."""

    def __init__(self, path: Path) -> None:
        self.path = path
        table = json.loads(
            subprocess.run(
                ["sfdisk", "--json", str(path)], capture_output=True, text=True, check=True
            ).stdout
        )["partitiontable"]
        sector = int(table.get("sectorsize", 512))
        self.partitions = [(int(p["start"]) * sector, p["type"]) for p in table["partitions"]]
        self.boot = f"{path}@@{self.partitions[0][0]}"
        self.root = f"{path}?offset={self.partitions[1][0]}"

    def debugfs(self, request: str) -> str:
        result = subprocess.run(
            ["debugfs", "-R", request, self.root], capture_output=True, text=True, timeout=60
        )
        return result.stdout

    def size(self, path: str) -> int | None:
        """The size of a file in the root, or None when there is none."""
        for line in self.debugfs(f"stat {path}").splitlines():
            if "Size:" in line:
                return int(line.split("Size:")[1].split()[0])
        return None

    def names(self, directory: str) -> list[str]:
        listed = self.debugfs(f"ls -p {directory}").splitlines()
        names = [line.split("/")[5] for line in listed if line.count("/") >= 6]
        return [n for n in names if n not in (".", "..")]

    def boot_file(self, name: str) -> str:
        return subprocess.run(
            ["mtype", "-i", self.boot, f"::{name}"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "MTOOLS_SKIP_CHECK": "1"},
        ).stdout


needs_tools = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("sfdisk", "debugfs", "mtype")),
    reason="sfdisk, debugfs and mtype are needed to read an image (fdisk, e2fsprogs, mtools)",
)


@needs_tools
@pytest.mark.skipif(not IMAGES, reason=NO_IMAGE)
@pytest.mark.parametrize("path", IMAGES, ids=lambda p: p.name)
def test_a_built_image_has_no_identity_and_no_secret(path: Path) -> None:
    image = Image(path)
    assert [kind for _, kind in image.partitions] == ["c", "83"]
    # qrpos is in it (else the checks below would pass on an empty root)
    assert "qrpos.service" in image.names("/etc/systemd/system")
    assert image.size("/opt/qrpos/venv") is not None
    assert "qrpos.service" in image.names("/etc/systemd/system/multi-user.target.wants")
    assert "qrpos-firstboot.service" in image.names("/etc/systemd/system/multi-user.target.wants")
    # an empty machine-id, no host keys, no credential, no till state, no seed
    assert image.size("/etc/machine-id") == 0
    assert image.size("/var/lib/dbus/machine-id") is None
    assert image.size("/var/lib/systemd/random-seed") is None
    assert image.size("/var/lib/systemd/credential.secret") is None
    assert "sshd_config" in image.names("/etc/ssh")
    assert [n for n in image.names("/etc/ssh") if n.startswith("ssh_host_")] == []
    assert image.names("/etc/credstore.encrypted") == []
    assert image.names("/var/lib/qrpos") == []
    assert image.size("/etc/host-ca-certificates.crt") is None
    assert image.size("/root/.cache") is None
    config = image.debugfs("cat /etc/qrpos/config.toml")
    assert 'state_dir = "/var/lib/qrpos"' in config
    assert not [line for line in config.splitlines() if line.startswith(("base_url", "password"))]
    # the boot partition: the kernel line names the root by its label
    assert f"root=LABEL={ROOT_LABEL} " in image.boot_file("cmdline.txt")
