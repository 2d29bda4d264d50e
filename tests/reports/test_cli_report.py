"""`qrpos report` and `qrpos history` as the installer runs them: a subprocess talking
real HTTP to a live sandbox, configured through the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from qrpos.simulator import Sandbox, TerminalCredentials


def run_cli(
    args: list[str], url: str, terminal: TerminalCredentials, state: Path
) -> subprocess.CompletedProcess[str]:
    creds = state / "creds"
    creds.mkdir(exist_ok=True)
    (creds / "qrpos-password").write_text(terminal.password, encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(state),
        "QRPOS_BASE_URL": url,
        "QRPOS_USERNAME": terminal.username,
        "QRPOS_STATE_DIR": str(state / "state"),
        "CREDENTIALS_DIRECTORY": str(creds),
        "QRPOS_LANGUAGE": "en",
    }
    return subprocess.run(
        [sys.executable, "-m", "qrpos.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_report_json_splits_1559_59z_and_1600z_into_two_local_days(
    live_url: str, sandbox: Sandbox, terminal: TerminalCredentials, tmp_path: Path
) -> None:
    sandbox.seed_charge(terminal.username, 1_500, datetime(2024, 5, 1, 15, 59, 59, tzinfo=UTC))
    sandbox.seed_charge(terminal.username, 2_500, datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC))
    may1 = run_cli(["report", "--date", "2024-05-01", "--json"], live_url, terminal, tmp_path)
    may2 = run_cli(["report", "--date", "2024-05-02", "--json"], live_url, terminal, tmp_path)
    assert may1.returncode == 0, may1.stderr
    assert may2.returncode == 0, may2.stderr
    one, two = json.loads(may1.stdout), json.loads(may2.stdout)
    assert one["charges"] == {"count": 1, "grossMNT": 1_500}
    assert two["charges"] == {"count": 1, "grossMNT": 2_500}
    assert two["from"] == "2024-05-01T16:00:00.000000Z"
    assert set(two) >= {"date", "from", "to", "charges", "reversed", "vat"}
    assert terminal.password not in may1.stdout + may1.stderr


def test_report_text_and_csv_for_a_person(
    live_url: str, sandbox: Sandbox, terminal: TerminalCredentials, tmp_path: Path
) -> None:
    sandbox.seed_charge(terminal.username, 1_234_567 // 2, datetime(2024, 5, 2, 2, tzinfo=UTC))
    target = tmp_path / "out.csv"
    done = run_cli(
        ["report", "--date", "2024-05-02", "--csv", str(target)], live_url, terminal, tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "Gross takings (not the payout): 617,283 ₮" in done.stdout
    assert "Exported 1 rows" in done.stderr
    assert "617283" in target.read_text(encoding="utf-8")


def test_report_refuses_a_mistyped_date_and_rejected_credentials_plainly(
    live_url: str, sandbox: Sandbox, terminal: TerminalCredentials, tmp_path: Path
) -> None:
    bad = run_cli(["report", "--date", "2024/05/02"], live_url, terminal, tmp_path)
    assert bad.returncode == 64 and "YYYY-MM-DD" in bad.stderr
    sandbox.rotate_password(terminal.username)
    rejected = run_cli(["report", "--date", "2024-05-02"], live_url, terminal, tmp_path)
    assert rejected.returncode == 4 and "credentials were rejected" in rejected.stderr


def test_history_prints_newest_first_then_the_cache_when_offline(
    live_url: str, sandbox: Sandbox, terminal: TerminalCredentials, tmp_path: Path
) -> None:
    old = sandbox.seed_charge(terminal.username, 1_000, datetime(2024, 5, 2, 1, tzinfo=UTC))
    new = sandbox.seed_charge(terminal.username, 2_000, datetime(2024, 5, 2, 2, tzinfo=UTC))
    args = ["history", "--from", "2024-05-02", "--to", "2024-05-02", "--json"]
    online = run_cli(args, live_url, terminal, tmp_path)
    assert online.returncode == 0, online.stderr
    assert [row["id"] for row in json.loads(online.stdout)] == [new, old]
    offline = run_cli(
        ["history", "--from", "2024-05-02", "--to", "2024-05-02"],
        "http://127.0.0.1:9",
        terminal,
        tmp_path,
    )
    assert offline.returncode == 3
    assert "OFFLINE" in offline.stderr
    lines = offline.stdout.splitlines()
    # on an 80-column console a row takes two lines: the id goes on the second
    assert new in lines[1] and old in lines[3]
    assert "2024-05-02 10:00:00" in lines[0]  # local time, UTC+8
