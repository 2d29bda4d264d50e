"""systemd/qrpos.service: systemd accepts it, its exposure is low, and it matches the code.

The unit names /opt/qrpos/venv/bin/qrpos and the user `qrpos`, which exist only on an
installed Pi. `systemd-analyze verify` checks that ExecStart= is executable, so it runs on
a copy whose ExecStart points at this venv's `qrpos`; every other line is verified as
shipped (verify does not resolve User=, so the missing user does not matter).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qrpos import journal
from qrpos.credentials import CREDENTIAL_NAME, CREDSTORE_PATH

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "qrpos.service"
INSTALLED_EXEC = "/opt/qrpos/venv/bin/qrpos"
EXPOSURE_THRESHOLD = 3.0

needs_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


def unit_settings(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for every assignment, in order (keys may repeat)."""
    section = ""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def values(key: str, section: str = "Service") -> list[str]:
    return [v for s, k, v in unit_settings(UNIT.read_text()) if s == section and k == key]


@needs_analyze
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    qrpos_bin = Path(sys.executable).with_name("qrpos")
    assert qrpos_bin.exists(), "the venv's qrpos console script is missing"
    text = UNIT.read_text()
    assert INSTALLED_EXEC in text
    copy = tmp_path / "qrpos.service"
    copy.write_text(text.replace(INSTALLED_EXEC, str(qrpos_bin)))
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Only complaints about our own unit count; the host's other units are not ours.
    ours = [line for line in result.stderr.splitlines() if "qrpos.service" in line]
    assert result.returncode == 0, result.stderr
    assert ours == [], "\n".join(ours)


@needs_analyze
def test_security_exposure_is_at_most_three() -> None:
    result = subprocess.run(
        [
            "systemd-analyze",
            "security",
            "--offline=true",
            f"--threshold={int(EXPOSURE_THRESHOLD * 10)}",
            "--no-pager",
            str(UNIT),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=UNIT.parent,
    )
    match = re.search(r"Overall exposure level for qrpos\.service: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    score = float(match.group(1))
    print(f"\nsystemd-analyze security --offline=true qrpos.service: exposure {score}")
    assert score <= EXPOSURE_THRESHOLD
    assert result.returncode == 0, result.stdout[-2000:]


def test_kiosk_owns_tty1_and_getty_steps_aside() -> None:
    assert values("TTYPath") == ["/dev/tty1"]
    assert values("StandardInput") == ["tty"]
    # Textual draws on stderr: anything else would leave the screen blank.
    assert values("StandardError") == ["tty"]
    assert "getty@tty1.service" in " ".join(values("Conflicts", "Unit"))
    assert "getty@tty1.service" in " ".join(values("After", "Unit"))
    assert "/dev/tty1 rw" in values("DeviceAllow")


def test_logs_go_to_the_journal_not_the_screen() -> None:
    env = dict(v.split("=", 1) for v in values("Environment"))
    assert env[journal.LOG_TARGET_ENV] == "journal"


def test_watchdog_restart_and_notify_are_set() -> None:
    assert values("Type") == ["notify"]
    assert values("Restart") == ["always"]
    assert values("WatchdogSec")
    assert values("StartLimitIntervalSec", "Unit") == ["0"]


def test_password_comes_from_the_encrypted_credential_the_code_reads() -> None:
    (load,) = values("LoadCredentialEncrypted")
    # the name alone: systemd searches /etc/credstore.encrypted/ (where provision.sh and
    # the code put it) and starts an unpaired card without it; a path would fail the unit
    assert load == CREDENTIAL_NAME
    assert Path("/etc/credstore.encrypted") / CREDENTIAL_NAME == CREDSTORE_PATH
    assert values("LoadCredential") == []


def test_runs_as_a_dedicated_user_in_the_device_groups_with_no_capabilities() -> None:
    assert values("User") == ["qrpos"]
    assert values("SupplementaryGroups") == ["video audio input dialout lp"]
    assert values("StateDirectory") == ["qrpos"]
    assert values("CapabilityBoundingSet") == [""]
    assert values("DevicePolicy") == ["closed"]
    assert values("NoNewPrivileges") == ["yes"]
    families = set(" ".join(values("RestrictAddressFamilies")).split())
    assert families == {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"}
