"""Every command speaks the kiosk's configured language: over a busy day, what the
owner's commands print in Mongolian holds no English sentence; the same runs in English
hold no Mongolian. Ids, codes and command syntax excepted. A sale's last try (why its
outcome is still unknown) and a refused charge's reason come from the layers below the
screens as words for any language (`qrpos.said`), so they are checked too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from headless import qrpos
from qrpos.cli import COMMANDS

#: what is not a language: ids, a code's tail, command syntax a person types as is,
#: units and abbreviations both catalogues use
NOT_WORDS = re.compile(
    r"(tx|term|vqr|ter)_\w+|…[\w-]{4}|qrpos( [a-z-]+)+|--[a-z-]+|[A-Z]{2,}\b|"
    r"\b(TX|ID|ok)\b|/[\w./?=-]+"
)
LATIN_WORD = re.compile(r"\b[A-Za-z]{3,}\b")
CYRILLIC_WORD = re.compile(r"[А-Яа-яЁёӨөҮү]{3,}")

RUNS = [
    ("history",),
    ("outbox", "list", "--all"),
    ("outbox", "review"),
    ("outbox", "resolve", "--deadline", "1"),
    ("report",),
    ("prices",),
    # refused before anything is sent: an earlier sale is still unsettled
    ("charge", "--amount", "5000", "--token", "vqr_" + "Ab3x" * 10),
]


def words(text: str, pattern: re.Pattern[str]) -> list[str]:
    plain = (NOT_WORDS.sub(" ", line) for line in text.splitlines())
    return [w for line in plain for w in pattern.findall(line)]


def test_the_commands_print_in_mongolian_when_the_kiosk_speaks_it(
    busy_day: dict[str, str],
) -> None:
    env = {**busy_day, "QRPOS_LANGUAGE": "mn"}
    foreign: dict[str, list[str]] = {}
    for args in RUNS:
        done = qrpos(env, *args)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        out = done.stdout + "\n".join(
            line
            for line in done.stderr.splitlines()
            if " qrpos." not in line  # log lines
        )
        if args == ("prices",):  # the slots' labels are the owner's own words
            out = out.replace("Long label here!", "")
        else:
            assert CYRILLIC_WORD.search(out), (args, out)
        foreign[" ".join(args)] = words(out, LATIN_WORD)
    assert {k: v for k, v in foreign.items() if v} == {}


#: what doctor's table may keep in Latin letters in Mongolian: a decoder's name, the
#: HTTP header, the credential's source as systemd names it, the probe's status word
DOCTOR_TERMS = {"zxing", "zbar", "Date", "systemd", "credential", "GET", "ok", "printer", "device"}


@pytest.mark.parametrize("language", ["mn", "en"])
def test_doctor_speaks_the_configured_language(busy_day: dict[str, str], language: str) -> None:
    done = qrpos({**busy_day, "QRPOS_LANGUAGE": language}, "doctor", "--no-camera")
    assert "Traceback" not in done.stderr, done.stderr
    if language == "mn":
        latin = set(words(done.stdout, LATIN_WORD)) - DOCTOR_TERMS
        assert latin == set(), done.stdout
        assert "шалгалт" in done.stdout.rstrip().splitlines()[-1]
    else:
        assert words(done.stdout, CYRILLIC_WORD) == [], done.stdout
        assert "check" in done.stdout.rstrip().splitlines()[-1]


def test_the_same_commands_in_english_hold_no_mongolian(busy_day: dict[str, str]) -> None:
    env = {**busy_day, "QRPOS_LANGUAGE": "en"}
    mongolian = {" ".join(args): words(qrpos(env, *args).stdout, CYRILLIC_WORD) for args in RUNS}
    assert {k: v for k, v in mongolian.items() if v} == {}


#: what `--help` keeps in Latin letters in Mongolian: the commands and their actions and
#: choices (typed as they are), and names of things: programs, files, protocols, fields
HELP_SYNTAX = set(COMMANDS) | {
    *("list", "resolve", "abandon", "review", "show", "set", "clear", "txid", "amount"),
    *("label",),
    *("slot", "debug", "info", "warning", "error", "http", "https", "qrpos", "stdin"),
    *("stderr", "file", "tokens", "refused", "zbar", "zxing", "scanner", "deploy"),
    *("keyring", "loopback", "systemd", "credential", "root", "sudo", "curl", "merchant"),
    *("Terminal", "Charge", "Service", "Transaction", "SQLite", "Prometheus", "textfile"),
    *("collector", "prom", "vatStatus", "issued", "voided"),
    *("test", "receipt", "queue", "printer", "device", "preview", "png", "PNG"),
    *("open", "close", "rename", "pin", "remove", "add"),
}
HELPS = (
    [(), *((c,) for c in sorted(COMMANDS))]
    + [("outbox", action) for action in ("list", "resolve", "abandon", "show", "review")]
    + [("prices", "set"), ("prices", "clear")]
    + [("print", action) for action in ("test", "receipt", "z", "queue")]
    + [("cashier", action) for action in ("list", "add", "rename", "pin", "remove")]
    + [("shift", action) for action in ("open", "x", "close", "z", "list")]
)


@pytest.mark.parametrize("command", HELPS, ids=" ".join)
def test_every_help_speaks_the_configured_language(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    """`--help` is the installer's reference on a kiosk configured for Mongolian: its
    sentences, argparse's own headings and the exit codes in Mongolian; in English no
    Mongolian word."""
    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    mongolian = qrpos({**env, "QRPOS_LANGUAGE": "mn"}, *command, "--help")
    assert mongolian.returncode == 0, mongolian.stderr
    assert mongolian.stdout.startswith("хэрэглээ: qrpos"), mongolian.stdout
    assert set(words(mongolian.stdout, LATIN_WORD)) - HELP_SYNTAX == set(), mongolian.stdout
    english = qrpos({**env, "QRPOS_LANGUAGE": "en"}, *command, "--help")
    assert english.stdout.startswith("usage: qrpos"), english.stdout
    assert words(english.stdout, CYRILLIC_WORD) == [], english.stdout
