"""`qrpos report --merge`: three tills' reports, made by the real `qrpos report --json`
against the sandbox with three terminals, summed into one day; different days, a till
given twice and a report without a till are refused with a clear message."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_cli_report import run_cli

from qrpos.simulator import Sandbox, TerminalCredentials

NOON = datetime(2024, 5, 2, 4, tzinfo=UTC)  # 12:00 local on 2024-05-02


def merge_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QRPOS_LANGUAGE": "en"}  # the refusals are read in English here
    return subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "report", "--merge", *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


@pytest.fixture
def three_tills(live_url: str, sandbox: Sandbox, tmp_path: Path) -> list[Path]:
    """Each till's `report --json` of 2024-05-02 in its own file, plus one of 05-03."""
    files = []
    amounts = [[1_000, 2_000], [5_000], [700, 300, 9_000]]
    tills: list[TerminalCredentials] = [sandbox.create_terminal("m_shop") for _ in amounts]
    for k, (till, sales) in enumerate(zip(tills, amounts, strict=True)):
        for i, amount in enumerate(sales):
            sandbox.seed_charge(till.username, amount, NOON.replace(minute=i))
        state = tmp_path / f"till{k}"
        state.mkdir()
        for day in ("2024-05-02", "2024-05-03"):
            run = run_cli(["report", "--date", day, "--json"], live_url, till, state)
            assert run.returncode == 0, run.stderr
            (state / f"{day}.json").write_text(run.stdout)
        files.append(state / "2024-05-02.json")
    files.append(tmp_path / "till0" / "2024-05-03.json")
    return files


def test_three_tills_sum_into_one_day_with_csv(three_tills: list[Path], tmp_path: Path) -> None:
    target = tmp_path / "shop.csv"
    run = merge_cli(*map(str, three_tills[:3]), "--json", "--csv", str(target))
    assert run.returncode == 0, run.stderr
    merged = json.loads(run.stdout)
    assert merged["date"] == "2024-05-02"
    assert merged["charges"] == {"count": 6, "grossMNT": 18_000}
    tills = [json.loads(p.read_text())["terminal"] for p in three_tills[:3]]
    assert [t["terminal"] for t in merged["tills"]] == tills and len(set(tills)) == 3
    rows = list(csv.DictReader(target.open()))
    assert [r["sales"] for r in rows] == ["2", "1", "3", "6"]
    assert rows[-1]["till"] == "total" and rows[-1]["grossMNT"] == "18000"
    table = merge_cli(*map(str, three_tills[:3]))
    assert "18,000" in table.stdout and all(t in table.stdout for t in tills)


def test_reports_of_different_days_are_refused(three_tills: list[Path]) -> None:
    run = merge_cli(str(three_tills[1]), str(three_tills[3]))
    assert run.returncode != 0 and run.stdout == ""
    assert "different days" in run.stderr and "2024-05-03" in run.stderr


def test_a_report_of_another_kind_is_refused_naming_it(
    three_tills: list[Path], tmp_path: Path
) -> None:
    """A file that says it is another kind of report (an X or a Z kept as JSON, a tool's
    own) never sums into the day, even with the day's date and counts."""
    assert json.loads(three_tills[0].read_text())["kind"] == "end_of_day"
    other = json.loads(three_tills[1].read_text()) | {"kind": "z"}
    odd = tmp_path / "z.json"
    odd.write_text(json.dumps(other))
    run = merge_cli(str(three_tills[0]), str(odd))
    assert run.returncode == 1 and run.stdout == ""
    assert "another kind (z)" in run.stderr and str(odd) in run.stderr


@pytest.mark.parametrize("shift_h", [1, -8])
def test_reports_of_one_day_over_different_windows_are_refused(
    three_tills: list[Path], tmp_path: Path, shift_h: int
) -> None:
    """The same date over other hours (a till that counted its day in another time zone,
    or an older qrpos that cut the day elsewhere) would add another 24 hours into the day:
    refused with both windows named. A report without `kind` (made before reports said
    it) still merges when its window is the day's."""
    theirs = json.loads(three_tills[1].read_text())
    moved = dict(theirs)
    for end in ("from", "to"):
        at = datetime.fromisoformat(theirs[end].replace("Z", "+00:00"))
        moved[end] = (at + timedelta(hours=shift_h)).strftime("%Y-%m-%dT%H:%M:%SZ")
    odd = tmp_path / "moved.json"
    odd.write_text(json.dumps(moved))
    run = merge_cli(str(three_tills[0]), str(odd))
    assert run.returncode == 1 and run.stdout == ""
    assert "different hours of the day" in run.stderr and moved["from"] in run.stderr
    older = tmp_path / "older.json"
    older.write_text(json.dumps({k: v for k, v in theirs.items() if k != "kind"}))
    assert merge_cli(str(three_tills[0]), str(older)).returncode == 0


def test_a_till_given_twice_is_refused(three_tills: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "again.json"
    copy.write_text(three_tills[0].read_text())
    run = merge_cli(str(three_tills[0]), str(three_tills[1]), str(copy))
    assert run.returncode != 0 and "given twice" in run.stderr


@pytest.mark.parametrize(
    ("content", "why"),
    [("{not json", "not JSON"), ('{"date": "2024-05-02"}', "names no till"), ("[]", "no date")],
)
def test_a_file_that_is_not_a_till_report_is_named_and_refused(
    tmp_path: Path, content: str, why: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    run = merge_cli(str(bad))
    assert run.returncode == 1 and why in run.stderr and str(bad) in run.stderr
    assert "Traceback" not in run.stderr


async def test_the_merge_says_what_each_cashier_took_across_tills(
    live_url: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    """Two tills with shifts (Bat works at both): each till's `report --json` carries its
    shifts of the day, and the merge sums them per cashier."""
    from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
    from qrpos.ledger.shifts import add_cashier, open_shift, take_z
    from qrpos.manager_pin import pin_record
    from qrpos.service import TerminalClient

    now = datetime.now(UTC)
    plan = {"Bat": [4_500, 6_000], "Saraa": [7_000]}
    files = []
    for k, (first, second) in enumerate([("Bat", "Saraa"), ("Saraa", "Bat")]):
        till = sandbox.create_terminal("m_shop")
        state = tmp_path / f"till{k}"
        (state / "state").mkdir(parents=True)
        ledger = Ledger.open(state / "state" / "outbox.sqlite3")
        client = TerminalClient(live_url, till.username, till.password, timeout_s=5.0)
        desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing())
        for name in (first, second):
            cashier = add_cashier(ledger, name, pin_record("1357", cashier=True), at=now)
            shift = open_shift(ledger, cashier, at=now)
            for amount in plan[name]:
                await desk.charge(amount, sandbox.create_wallet(50_000).qr_token, deadline_s=5)
            if name == first:
                take_z(ledger, shift, at=now, by="cashier")
        await client.aclose()
        ledger.close()
        run = run_cli(["report", "--json"], live_url, till, state)
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert [s["cashier"] for s in report["shifts"]] == [first, second]
        assert report["shifts"][1]["open"] is True  # the second shift is still open
        (state / "day.json").write_text(run.stdout)
        files.append(state / "day.json")
    run = merge_cli(*map(str, files), "--json")
    assert run.returncode == 0, run.stderr
    merged = json.loads(run.stdout)
    assert merged["cashiers"]["Bat"]["shifts"] == 2
    assert merged["cashiers"]["Bat"]["sales_mnt"] == 2 * 10_500
    assert merged["cashiers"]["Saraa"]["sales_mnt"] == 2 * 7_000
    assert merged["charges"]["grossMNT"] == 2 * 17_500
    table = merge_cli(*map(str, files))
    assert "Bat" in table.stdout and "21,000" in table.stdout
    mongolian = subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "report", "--merge", *map(str, files)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "QRPOS_LANGUAGE": "mn"},
    )  # fmt: skip
    assert "кассчин" in mongolian.stdout and "өдрийн хаалт" in mongolian.stdout
    assert not {"till", "sales", "total", "cashier"} & set(mongolian.stdout.split())
