"""Every command's output fits an 80-column console (a Pi's tty1) over a busy day's data:
its help, the history, the outbox with unsettled sales, the day's report, the quick
prices and doctor's checks. Each run as a real process with COLUMNS=80."""

from __future__ import annotations

import argparse
import unicodedata
from pathlib import Path

import pytest
from test_cli_usage_errors import BASELINE

from headless import one_usage_message, qrpos
from qrpos.cli import COMMANDS, build_parser, chosen_command
from qrpos.cli.usage import EXIT_USAGE, fold, speak_argparse
from qrpos.present.i18n import current_language, set_language

WIDTH = 80


def columns(line: str) -> int:
    """Cells the line takes on a console (wide East Asian characters take two, combining
    marks none)."""
    return sum(
        0
        if unicodedata.category(c) in ("Mn", "Me")
        else 2
        if unicodedata.east_asian_width(c) in "WF"
        else 1
        for c in line
    )


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


# --- usage errors ------------------------------------------------------------------------

#: command lines argparse or an option's checker refuses, beyond the generated ones below
MALFORMED = [
    ("chrge",),
    ("reverse", "nonsense"),
    ("reverse", "tx_" + "x" * 60 + "!"),
    ("charge", "--token", "vqr_x"),
    ("charge", "--amount", "1.5", "--token", "vqr_x"),
    ("charge", "--amount", "5", "--token", "https://example.com/pay"),
    ("charge", "--amount", "5", "--token", "vqr_x", "--deadline", "-1"),
    ("print", "receipt", "nonsense"),
    ("prices", "set", "99", "5"),
    ("prices", "set", "1", "abc"),
    ("outbox", "show"),
    ("outbox", "nonsense"),
    ("shift", "z", "abc"),
    ("cashier", "add"),
    ("decode",),
    ("pair", "--username", "nobody"),
    ("simulator", "--port", "99999"),
]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {}


def _usage_errors() -> list[tuple[str, ...]]:
    """An unknown option on every command and action, a value no checker accepts for
    every option that checks one, and the hand-picked lines above."""
    lines = list(MALFORMED)
    for command, parser in sorted(_subparsers(build_parser()).items()):
        lines.append((command, "--no-such-option"))
        for action, _ in sorted(_subparsers(parser).items()):
            lines.append((command, action, "--no-such-option"))
        for option in parser._actions:
            if option.option_strings and (option.type is not None or option.choices):
                lines.append((*BASELINE[command], f"{option.option_strings[-1]}=x\x00"))
    return lines


@pytest.mark.parametrize("language", ["mn", "en"])
def test_every_usage_error_of_every_command_fits_80_columns(
    language: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`qrpos reverse nonsense` printed one line of 108 columns in mn and 114 in en: a
    usage error is folded, the command's name kept whole, in both languages."""
    before = current_language()
    set_language(language)
    speak_argparse()
    wide: dict[str, list[str]] = {}
    try:
        for words in _usage_errors():
            capsys.readouterr()
            try:
                build_parser(only=chosen_command(list(words))).parse_args(list(words))
            except SystemExit as exited:
                err = capsys.readouterr().err
                assert exited.code == EXIT_USAGE and one_usage_message(err, 200), (words, err)
                wide[" ".join(words)] = too_wide(err)
            else:  # a path option takes any text: its command refuses it later, or not
                assert words not in MALFORMED, words
    finally:
        set_language(before)
    assert {k: v for k, v in wide.items() if v} == {}


@pytest.mark.parametrize("language", ["mn", "en"])
@pytest.mark.parametrize(
    "words", [("history", "--from", "yesterday"), ("report", "--date", "2020-13-45")]
)
def test_a_usage_error_a_command_finds_fits_80_columns(
    language: str, words: tuple[str, ...], tmp_path: Path
) -> None:
    env = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = qrpos({**env, "QRPOS_LANGUAGE": language, "QRPOS_STATE_DIR": str(tmp_path)}, *words)
    assert done.returncode == EXIT_USAGE and one_usage_message(done.stderr), done.stderr


def test_the_fold_keeps_a_long_message_whole_and_within_the_console() -> None:
    said = "qrpos\u00a0reverse: " + "слово " * 30 + "x" * 100
    folded = fold(said)
    assert too_wide(folded) == [] and len(folded.splitlines()) > 2
    assert "".join(folded.split()) == "".join(said.split())
    assert folded.startswith("qrpos\u00a0reverse:")


def test_the_fold_keeps_a_combining_mark_on_its_letter() -> None:
    """A word of accented letters typed as letter + combining mark (a value a usage error
    quotes) was counted a column per mark: its lines were cut at half the console's width,
    and a mark was cut from its letter to the start of the next line, where it sat on the
    indent's space."""
    said = "qrpos\u00a0display: " + "e\u0301" * 120
    folded = fold(said)
    lines = folded.splitlines()
    assert too_wide(folded) == [] and "".join(folded.split()) == "".join(said.split())
    assert all(unicodedata.category(line.lstrip()[0]) != "Mn" for line in lines)
    assert columns(lines[1]) >= WIDTH - 1  # the console's width is used
