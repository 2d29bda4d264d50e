"""The end-of-day screen: the boundary day, the chart, and agreement with `qrpos report`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from owner_harness import OwnerHost
from textual.widgets import Static

from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.screens.owner.endofday import EndOfDayScreen

DAY = date(2024, 5, 2)  # the fixtures' kiosk clock says it is this day
MIDNIGHT = datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC)


async def open_eod(pilot: Any) -> EndOfDayScreen:
    await pilot.press("3")
    screen = pilot.app.screen
    assert isinstance(screen, EndOfDayScreen)
    for _ in range(200):
        await pilot.pause(0.02)
        if screen.eod is not None:
            return screen
    raise AssertionError("end of day never shown")


def cli_report(url: str, terminal: TerminalCredentials, tmp: Path, day: date) -> dict[str, Any]:
    creds = tmp / "creds"
    creds.mkdir(exist_ok=True)
    (creds / "qrpos-password").write_text(terminal.password, encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "QRPOS_BASE_URL": url,
        "QRPOS_USERNAME": terminal.username,
        "QRPOS_STATE_DIR": str(tmp / "cli-state"),
        "CREDENTIALS_DIRECTORY": str(creds),
    }
    done = subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "report", "--date", day.isoformat(), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


async def test_screen_and_cli_report_agree_across_the_1600z_boundary(
    host: Callable[..., OwnerHost],
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    live_url: str,
    tmp_path: Path,
) -> None:
    sandbox.seed_charge(terminal.username, 1_500, MIDNIGHT - timedelta(seconds=1))
    sandbox.seed_charge(terminal.username, 2_500, MIDNIGHT)
    sandbox.seed_charge(
        terminal.username, 800, MIDNIGHT + timedelta(hours=3), status=spec.TxStatus.REVERSED
    )
    sandbox.seed_charge(
        terminal.username,
        12_000,
        MIDNIGHT + timedelta(hours=9, minutes=30),
        vat_status=spec.VatStatus.PENDING,
    )
    async with host(first_poll_s=30).run_test(size=(100, 40)) as pilot:
        screen = await open_eod(pilot)
        assert screen.eod is not None
        today = screen.eod.to_json()
        summary = str(screen.query_one("#eod-summary", Static).render())
        chart = str(screen.query_one("#eod-chart", Static).render())
        await pilot.press("left")
        for _ in range(200):
            await pilot.pause(0.02)
            if screen.eod is not None and screen.eod.day == DAY - timedelta(days=1):
                break
        assert screen.eod is not None
        yesterday = screen.eod.to_json()

    assert today["charges"] == {"count": 2, "grossMNT": 14_500}
    assert today["reversed"] == {"count": 1, "amountMNT": 800}
    assert today["vat"] == {"pending": 1, "issued": 1, "voided": 1}
    assert yesterday["charges"] == {"count": 1, "grossMNT": 1_500}
    assert "Gross takings (not the payout)" in summary and "14,500 ₮" in summary
    assert chart.splitlines()[0].startswith("00 ")  # the 16:00:00Z charge is local 00h
    assert "█" in chart

    for day, shown in ((DAY, today), (DAY - timedelta(days=1), yesterday)):
        printed = cli_report(live_url, terminal, tmp_path, day)
        shown = {k: v for k, v in shown.items() if k != "reconciliation"}
        printed.pop("reconciliation", None)
        assert printed.pop("terminal") == terminal.username  # names the till (report --merge)
        assert printed.pop("shifts") == []  # its shifts of the day (none: no cashiers)
        assert printed == shown


async def test_language_switch_on_screen_changes_the_owner_texts(
    host: Callable[..., OwnerHost],
) -> None:
    async with host(first_poll_s=30).run_test(size=(100, 30)) as pilot:
        title = pilot.app.screen.query_one("#title", Static)
        assert str(title.render()) == "Owner"
        await pilot.press("l")
        await pilot.pause(0.1)
        title = pilot.app.screen.query_one("#title", Static)
        assert str(title.render()) == "Эзэн"
        screen = await open_eod(pilot)
        assert "Нийт орлого" in str(screen.query_one("#eod-summary", Static).render())


async def test_switching_language_on_end_of_day_and_history_redraws_them_live(
    host: Callable[..., OwnerHost], sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    sandbox.seed_charge(terminal.username, 2_500, MIDNIGHT + timedelta(hours=2))
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        screen = await open_eod(pilot)
        assert "Gross takings" in str(screen.query_one("#eod-summary", Static).render())
        await pilot.app.run_action("language")
        for _ in range(100):
            await pilot.pause(0.02)
            if "Нийт орлого" in str(screen.query_one("#eod-summary", Static).render()):
                break
        assert str(screen.query_one("#title", Static).render()) == "Өдрийн хаалт"
        assert "2,500 ₮" in str(screen.query_one("#eod-summary", Static).render())
        await pilot.press("escape")
        await pilot.press("1")
        history = pilot.app.screen
        await pilot.pause(0.2)
        await pilot.app.run_action("language")
        for _ in range(100):
            await pilot.pause(0.02)
            if str(history.query_one("#title", Static).render()) == "History":
                break
        assert str(history.query_one("#title", Static).render()) == "History"
        assert "End of the history" in str(history.query_one("#more", Static).render())
