"""`qrpos doctor` against the demo sandbox, on this camera-less machine."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from installer.conftest import LiveSimulator, qrpos_env
from qrpos.doctor import Status, check_clock, check_outbox, ntp_fix
from qrpos.service.outcomes import Exchange

LINES = ("camera", "decoder", "state dir", "outbox", "other install", "credentials", "/health",
         "clock", "/ready", "credentials live")  # fmt: skip
#: the optional peripherals' lines (skipped when none is set), in the JSON's order
OPTIONAL = ("handheld", "printer", "customer display")


def doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "doctor", "--camera-seconds", "0.2",
         "--state-dir", str(tmp_path / "state"), *args],
        capture_output=True, text=True, timeout=60, env=qrpos_env(tmp_path, **env),
    )  # fmt: skip


def table(stdout: str) -> dict[str, str]:
    rows = {}
    for line in stdout.splitlines():
        for name in sorted(LINES, key=len, reverse=True):
            if line.startswith(name + " "):
                rows[name] = line
                break
    return rows


def test_paired_kiosk_without_camera_fails_only_the_camera_and_names_the_fix(
    tmp_path: Path, live_simulator: LiveSimulator
) -> None:
    creds = live_simulator.credentials_dir(tmp_path)
    result = doctor(
        tmp_path, "--base-url", live_simulator.url, "--username", live_simulator.username,
        CREDENTIALS_DIRECTORY=str(creds),
    )  # fmt: skip
    print(result.stdout)
    assert result.returncode == 1
    rows = table(result.stdout)
    assert set(rows) == set(LINES)
    assert " FAIL " in rows["camera"]
    assert "fix: connect and enable the camera" in result.stdout
    for name in LINES[1:]:
        assert " ok " in rows[name], rows[name]
    assert "binary mode: exact bytes" in rows["decoder"]
    assert "systemd credential" in rows["credentials"]
    assert live_simulator.password not in result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("1 check failed: camera")


def test_unpaired_kiosk_names_provision_for_the_missing_credentials(
    tmp_path: Path, live_simulator: LiveSimulator
) -> None:
    result = doctor(
        tmp_path, "--json", "--base-url", live_simulator.url,
        "--username", live_simulator.username,
    )  # fmt: skip
    assert result.returncode == 1
    checks = {c["check"]: c for c in json.loads(result.stdout)}
    assert list(checks) == [*LINES[:2], *OPTIONAL, *LINES[2:]]
    assert {checks[name]["status"] for name in OPTIONAL} == {"skip"}
    assert checks["credentials"]["status"] == "FAIL"
    assert "provision.sh" in checks["credentials"]["fix"]
    assert checks["credentials live"]["status"] == "skip"
    assert checks["/health"]["status"] == "ok"  # the probes need no credentials


def test_rejected_credentials_say_rotate_and_provision(
    tmp_path: Path, live_simulator: LiveSimulator
) -> None:
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "qrpos-password").write_text("vpt_" + "0" * 32)
    result = doctor(
        tmp_path, "--json", "--no-camera", "--base-url", live_simulator.url,
        "--username", live_simulator.username, CREDENTIALS_DIRECTORY=str(creds),
    )  # fmt: skip
    live = {c["check"]: c for c in json.loads(result.stdout)}["credentials live"]
    assert live["status"] == "FAIL"
    assert "401" in live["detail"]
    assert "rotate the password" in live["fix"]


def test_unreachable_service_fails_every_service_line(tmp_path: Path) -> None:
    result = doctor(tmp_path, "--json", "--no-camera", "--base-url", "http://127.0.0.1:9")
    checks = {c["check"]: c for c in json.loads(result.stdout)}
    assert result.returncode == 1
    assert checks["/health"]["status"] == "FAIL"
    assert "--base-url" in checks["/health"]["fix"]


def test_clock_far_from_the_service_date_fails_with_the_ntp_fix(english: None) -> None:
    sent = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
    behind = Exchange(server_date=sent + timedelta(minutes=7), sent_at=sent, elapsed_s=0.2)
    check = check_clock(behind)
    assert check.status is Status.FAIL
    assert "420 s behind" in check.detail
    assert check.fix == ntp_fix()
    close = Exchange(server_date=sent + timedelta(seconds=1), sent_at=sent, elapsed_s=0.2)
    assert check_clock(close).status is Status.OK


def test_corrupt_outbox_fails_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "outbox.sqlite3"
    path.write_bytes(b"SQLite format 3\x00" + b"\xde\xad" * 4096)
    check = check_outbox(path)
    assert check.status is Status.FAIL
    assert check.fix
    assert path.exists()


@pytest.mark.parametrize("where", ["--base-url", "QRPOS_BASE_URL", "file"])
def test_an_unreachable_service_s_fix_names_where_its_url_was_set(
    tmp_path: Path, where: str
) -> None:
    """The fix points at the setting that chose the URL: the option, the environment
    variable or the config file, never a file that did not set it."""
    url = "http://127.0.0.1:9"  # nothing listens on the discard port
    args: list[str] = ["--no-camera", "--username", "term_abcdefgh"]
    extra: dict[str, str] = {"COLUMNS": "200"}  # each fix on one line
    if where == "--base-url":
        args += ["--base-url", url]
    elif where == "QRPOS_BASE_URL":
        extra["QRPOS_BASE_URL"] = url
    else:
        config = tmp_path / "config.toml"
        config.write_text(f'base_url = "{url}"\n')
        args += ["--config", str(config)]
    result = doctor(tmp_path, *args, **extra)
    fixes = [line for line in result.stdout.splitlines() if "service URL" in line]
    assert fixes, result.stdout
    expected = str(tmp_path / "config.toml") if where == "file" else where
    assert all(expected in line for line in fixes), result.stdout
    assert where == "file" or "config.toml" not in result.stdout


@pytest.mark.parametrize("language", ["mn", "en"])
def test_the_table_keeps_a_command_on_one_line_and_within_80_columns(language: str) -> None:
    """An installer types the fix's command as it reads it: folding the table under its
    column never breaks `qrpos outbox review --clear-foreign` across two lines."""
    from qrpos.doctor import Check, render_table
    from qrpos.present.i18n import current_language, set_language, t

    was = current_language()
    set_language(language)
    try:
        fix = t("doctor.fix.other_install")
        detail = t("doctor.other_install.seen", count=1, since="2026-11-27 16:13",
                   tx="tx_aff73cb65c3f2b4343e845c4")  # fmt: skip
        checks = [
            Check("other install", Status.FAIL, detail, fix),
            Check("credentials live", Status.OK, "x"),  # the widest name sets the column
        ]
        lines = render_table(checks).splitlines()
    finally:
        set_language(was)
    assert all(len(line) <= 80 for line in lines), lines
    assert any("qrpos outbox review --clear-foreign" in line for line in lines), lines
