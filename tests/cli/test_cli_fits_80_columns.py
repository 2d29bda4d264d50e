"""Every command's output fits an 80-column console (a Pi's tty1) over a busy day's data:
its help, the history, the outbox with unsettled sales, the day's report, the quick
prices and doctor's checks. Each run as a real process with COLUMNS=80."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from headless import qrpos
from qrpos.cli import COMMANDS

WIDTH = 80


def columns(line: str) -> int:
    """Cells the line takes on a console (wide East Asian characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if columns(line) > WIDTH]


RUNS = [
    ("history",),
    ("history", "--limit", "100"),
    ("outbox", "list", "--all"),
    ("outbox", "review"),
    ("report",),
    ("report", "--date", "2020-01-01"),
    ("prices",),
    ("doctor",),
    ("print", "queue"),
    ("print", "test"),  # no printer set: the error names every way to set one
    ("cashier",),
    ("shift", "list"),
    ("shift", "x"),  # no shift open: the error says how to open one
]


@pytest.mark.parametrize("language", ["mn", "en"])
def test_every_command_fits_80_columns_over_a_busy_day(
    busy_day: dict[str, str], language: str
) -> None:
    wide: dict[str, list[str]] = {}
    for args in RUNS:
        done = qrpos({**busy_day, "QRPOS_LANGUAGE": language}, *args)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        wide[" ".join(args)] = too_wide(done.stdout) + too_wide(done.stderr)
    assert {k: v for k, v in wide.items() if v} == {}


#: every command's help, and the help of each action under a command
HELPS = (
    [(), *((c,) for c in sorted(COMMANDS))]
    + [("outbox", action) for action in ("list", "resolve", "abandon", "review")]
    + [("prices", "set"), ("prices", "clear")]
    + [("print", action) for action in ("test", "receipt", "z", "queue")]
    + [("cashier", action) for action in ("list", "add", "rename", "pin", "remove")]
    + [("shift", action) for action in ("open", "x", "close", "z", "list")]
)


@pytest.mark.parametrize("language", ["mn", "en"])
@pytest.mark.parametrize("command", HELPS, ids=" ".join)
def test_every_help_fits_80_columns(
    command: tuple[str, ...], language: str, tmp_path: Path
) -> None:
    env = {"COLUMNS": str(WIDTH), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = qrpos({**env, "QRPOS_LANGUAGE": language}, *command, "--help")
    assert done.returncode == 0, done.stderr
    assert too_wide(done.stdout) == []
