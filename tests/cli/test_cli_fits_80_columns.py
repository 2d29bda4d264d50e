"""Every command's output fits an 80-column console (a Pi's tty1) over a busy day's data:
its help, the history, the outbox with unsettled sales, the day's report, the quick
prices and doctor's checks. Each run as a real process with COLUMNS=80."""

from __future__ import annotations

import shutil
import tempfile
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from headless import cli_environment, qrpos
from qrpos import spec
from qrpos.cli import COMMANDS
from qrpos.simulator import Sandbox, TerminalCredentials

WIDTH = 80


def columns(line: str) -> int:
    """Cells the line takes on a console (wide East Asian characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if columns(line) > WIDTH]


@pytest.fixture
def busy_day(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> dict[str, str]:
    """A canteen's day: sixty sales of every size today and yesterday, refunds, pending
    receipts, sales of this kiosk's own (one unsettled, one waiting for the owner)."""
    env = cli_environment(tmp_path, live_url, terminal)
    env["COLUMNS"] = str(WIDTH)
    # a state dir as short as a kiosk's (/var/lib/qrpos): pytest's own paths are longer
    # than a console line, and a path is never folded
    short = Path(tempfile.mkdtemp(prefix="q", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    env["QRPOS_STATE_DIR"] = str(short / "state")
    now = datetime.now(UTC)
    for i in range(60):
        amount = (1, 999, 4_500, 12_000, 250_000, spec.AMOUNT_MAX_MNT)[i % 6]
        status = spec.TxStatus.REVERSED if i % 9 == 0 else spec.TxStatus.COMPLETED
        vat = spec.VatStatus.PENDING if i % 7 == 0 and status is spec.TxStatus.COMPLETED else None
        when = now - timedelta(minutes=23 * i)
        sandbox.seed_charge(terminal.username, amount, when, status=status, vat_status=vat)
    for amount in (4_500, spec.AMOUNT_MAX_MNT):
        wallet = sandbox.create_wallet(2_000_000)
        done = qrpos(env, "charge", "--amount", str(amount), "--token", wallet.qr_token)
        assert done.returncode == 0, done.stderr
    wallet = sandbox.create_wallet(2_000_000)
    sandbox.arm_fault("error_before_commit", count=50, operation="charge")
    kept = qrpos(env, "charge", "--amount", "12000", "--token", wallet.qr_token, "--deadline", "1")
    assert kept.returncode == 3, kept.stderr
    sandbox.clear_faults()
    assert qrpos(env, "prices", "set", "1", "1000000", "Long label here!").returncode == 0
    return env


RUNS = [
    ("history",),
    ("history", "--limit", "100"),
    ("outbox", "list", "--all"),
    ("outbox", "review"),
    ("report",),
    ("report", "--date", "2020-01-01"),
    ("prices",),
    ("doctor",),
]


def test_every_command_fits_80_columns_over_a_busy_day(busy_day: dict[str, str]) -> None:
    wide: dict[str, list[str]] = {}
    for args in RUNS:
        done = qrpos(busy_day, *args)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        wide[" ".join(args)] = too_wide(done.stdout) + too_wide(done.stderr)
    assert {k: v for k, v in wide.items() if v} == {}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_help_fits_80_columns(command: str, tmp_path: Path) -> None:
    env = {"COLUMNS": str(WIDTH), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = qrpos(env, command, "--help")
    assert done.returncode == 0, done.stderr
    assert too_wide(done.stdout) == []
