"""deploy/install.sh and deploy/provision.sh: shellcheck-clean, and the dry-run plan is complete.

The dry run is the only mode safe on a test machine: it must print every step of a real
install on a plain Debian machine (no Pi, no picamera2) and change nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from qrpos.credentials import CREDSTORE_PATH

#: one worker for the module (--dist loadgroup): its dry-run plan (a module fixture, the
#: install script run once) is then run once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("install_dry_run")

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "deploy" / "install.sh"
PROVISION = ROOT / "deploy" / "provision.sh"
RELEASE = ROOT / "deploy" / "release.sh"
PAIR_STORE = ROOT / "deploy" / "pair-store.sh"


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.parametrize(
    "script",
    # the root checks too: what installs and tests both releases (docs/releases.md)
    [INSTALL, PROVISION, RELEASE, PAIR_STORE, *ROOT.glob("benchmarks/*_in_root.sh")],
    ids=lambda p: p.name,
)
def test_shellcheck_is_clean(script: Path) -> None:
    result = subprocess.run(
        ["shellcheck", "--severity=style", str(script)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


@pytest.fixture(scope="module")
def plan() -> str:
    watched = [Path("/opt/qrpos"), Path("/etc/systemd/system/qrpos.service"), Path("/etc/qrpos")]
    before = {p: p.exists() for p in watched}
    result = subprocess.run(
        ["bash", str(INSTALL), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert result.returncode == 0, result.stderr
    # nothing on the machine changed
    assert {p: p.exists() for p in watched} == before
    print(result.stdout)
    return result.stdout + result.stderr


def test_plan_installs_the_system_packages(plan: str) -> None:
    (line,) = [ln for ln in plan.splitlines() if "apt-get install" in ln]
    for package in ("python3-venv", "python3-numpy", "console-setup", "kbd", "libfribidi0"):
        assert f" {package}" in line
    assert "libzbar0" in line  # libzbar0 on Bookworm, libzbar0t64 on Trixie
    if "python3-picamera2" not in line:
        # a plain Debian machine says what that means instead of failing later
        assert "python3-picamera2 is not in this machine's apt sources" in plan


def test_plan_sets_a_cyrillic_console_font_and_no_blanking(plan: str) -> None:
    assert 'CODESET="Uni3"' in plan or "CODESET already Uni3" in plan
    assert "consoleblank=0" in plan


def test_plan_creates_the_service_user_in_the_video_group(plan: str) -> None:
    assert "useradd --system" in plan or "usermod --append --groups video qrpos" in plan
    if "useradd" in plan:
        assert "--groups video" in plan


def test_plan_builds_a_venv_that_sees_system_picamera2_with_numpy_pinned(plan: str) -> None:
    # each release is built beside the current one; /opt/qrpos/venv links to the current
    [venv] = re.findall(r"-m venv --system-site-packages (/opt/qrpos/releases/\d{8}T\d{6}Z)", plan)
    assert f"release.sh activate {venv}" in plan
    assert "locked numpy==" in plan  # the lock's numpy, checked against the system's
    (pip,) = [ln for ln in plan.splitlines() if "pip install" in ln and "--no-index" in ln]
    assert str(ROOT) in pip  # installs this checkout (or --source)


def test_plan_installs_enables_the_unit_and_moves_getty_aside(plan: str) -> None:
    assert f"install -m 0644 {ROOT}/systemd/qrpos.service /etc/systemd/system/qrpos.service" in (
        plan
    )
    assert "systemctl daemon-reload" in plan
    assert "systemctl enable qrpos.service" in plan
    assert "systemctl disable getty@tty1.service" in plan
    assert f"install -d -m 0700 {CREDSTORE_PATH.parent}" in plan
    assert "provision.sh" in plan  # says what to do next


def test_plan_installs_the_pairing_screens_way_to_root(plan: str) -> None:
    """Issue 48: the socket, its service, the helper and provision.sh where the helper
    runs it, and the socket enabled with the kiosk."""
    units = f"{ROOT}/systemd"
    assert f"install -m 0644 {units}/qrpos-pair.socket /etc/systemd/system/" in plan
    assert f"install -m 0644 {units}/qrpos-pair@.service /etc/systemd/system/" in plan
    assert f"{PAIR_STORE} /usr/local/sbin/qrpos-pair-store" in plan
    assert f"{PROVISION} /usr/local/sbin/qrpos-provision" in plan
    assert "/usr/local/sbin/qrpos-provision" in PAIR_STORE.read_text()
    assert "systemctl enable qrpos.service qrpos-pair.socket" in plan


def test_plan_steps_run_in_order(plan: str) -> None:
    steps = [ln for ln in plan.splitlines() if ln.startswith("==> ")]
    order = [
        "system",
        "packages",
        "Console",
        "user",
        "Release",
        "Configuration",
        "unit",
        "health gate",
        "Done",
    ]
    positions = [next(i for i, s in enumerate(steps) if word in s) for word in order]
    assert positions == sorted(positions)


def test_unknown_option_is_refused_with_usage_code() -> None:
    result = subprocess.run(["bash", str(INSTALL), "--frobnicate"], capture_output=True, text=True)
    assert result.returncode == 64
    assert "unknown option --frobnicate" in result.stderr


def test_provision_refuses_without_root_or_install(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(PROVISION)], capture_output=True, text=True, input="", timeout=30
    )
    assert result.returncode == 1
    # as root here the install is missing; as a user, root is missing: both name the fix
    assert "run as root" in result.stderr or "run deploy/install.sh first" in result.stderr


def test_provision_stores_the_password_only_through_systemd_creds() -> None:
    text = PROVISION.read_text()
    assert 'systemd-creds encrypt --name="$CREDENTIAL" - ' in text
    assert "read -r -s" in text  # no echo at the prompt
    # the password is piped from the printf builtin, never an argument or a file
    assert '"$PASSWORD" >' not in text
    assert "--password-stdin" in text


def test_plan_updates_apt_before_asking_for_candidates(plan: str) -> None:
    """A fresh image has empty package lists: "no candidate" must not come from them."""
    lines = plan.splitlines()
    update = next(i for i, ln in enumerate(lines) if "apt-get update" in ln)
    install = next(i for i, ln in enumerate(lines) if "apt-get install" in ln)
    packages = next(i for i, ln in enumerate(lines) if ln.strip().startswith("packages:"))
    assert update < packages < install
    assert sum("apt-get update" in ln for ln in lines) == 1


def test_plan_puts_qrpos_on_the_path_and_makes_the_metrics_folder(plan: str) -> None:
    assert "ln -sfn /opt/qrpos/venv/bin/qrpos /usr/local/bin/qrpos" in plan
    assert "install -d -m 0755 -o qrpos -g qrpos /var/lib/node_exporter/textfile_collector" in (
        plan
    )


def test_an_image_build_enables_the_unit_without_a_running_systemd() -> None:
    """In a chroot (pi-gen, rpi-image-gen) `systemctl daemon-reload` fails under set -e:
    the image's plan enables the unit for the first boot and reloads nothing."""
    result = subprocess.run(
        ["bash", str(INSTALL), "--dry-run", "--image-build"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert result.returncode == 0, result.stderr
    plan = result.stdout
    assert "systemctl enable qrpos.service" in plan
    assert "daemon-reload" not in plan
    assert "systemctl restart" not in plan
    assert "provision.sh" in plan  # pairing is a first-boot step


def test_an_image_build_installs_the_lock_from_a_wheelhouse_with_its_hashes() -> None:
    """deploy/image/build.sh downloads the lock's wheels on the host: install.sh in the
    (emulated) root installs from them with no index, and pip still checks every hash."""
    result = subprocess.run(
        ["bash", str(INSTALL), "--dry-run", "--image-build", "--wheelhouse", "/var/tmp/wheels"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert result.returncode == 0, result.stderr
    [lock_line] = [
        ln for ln in result.stdout.splitlines() if "requirements.lock" in ln and "pip" in ln
    ]
    assert "--no-index --find-links /var/tmp/wheels --require-hashes -r " in lock_line
    missing = subprocess.run(
        ["bash", str(INSTALL), "--dry-run", "--wheelhouse"], capture_output=True, text=True
    )
    assert missing.returncode == 64


def test_without_a_wheelhouse_the_lock_comes_from_the_index(plan: str) -> None:
    [lock_line] = [ln for ln in plan.splitlines() if "requirements.lock" in ln and "pip" in ln]
    assert "--require-hashes" in lock_line
    assert "--no-index" not in lock_line


def _plan_on(tmp_path: Path, codename: str) -> str:
    os_release = tmp_path / "os-release"
    os_release.write_text(f"ID=debian\nVERSION_CODENAME={codename}\n")
    result = subprocess.run(
        ["bash", str(INSTALL), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C", "QRPOS_OS_RELEASE": str(os_release)},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


@pytest.mark.parametrize(
    ("codename", "said"),
    [
        ("bookworm", "supported: Debian 12 / Raspberry Pi OS Bookworm (Python 3.11, numpy 1.24.2)"),
        ("trixie", "supported: Debian 13 / Raspberry Pi OS Trixie (Python 3.13, numpy 2.2.4)"),
    ],
)
def test_both_releases_are_accepted_by_name(tmp_path: Path, codename: str, said: str) -> None:
    plan = _plan_on(tmp_path, codename)
    assert said in plan
    assert "not supported" not in plan and "WARNING: trixie" not in plan


def test_any_other_release_is_told_plainly_what_happens(tmp_path: Path) -> None:
    plan = _plan_on(tmp_path, "noble")
    warnings = [line.split("WARNING: ", 1)[1] for line in plan.splitlines() if "WARNING: " in line]
    told = " ".join(warnings)
    assert "noble is not a release qrpos supports (bookworm, trixie)" in told
    assert "stops at that check" in told and "before any release is made" in told
