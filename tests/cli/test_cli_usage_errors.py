"""Every command: a malformed option value exits 64 with one line, never a traceback and
never the code of a business outcome; accepted values are well-formed."""

from __future__ import annotations

import argparse
import functools
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headless import one_usage_message
from qrpos.cli import COMMANDS, build_parser, main
from qrpos.cli.usage import EXIT_USAGE, safe_output

#: a command run in-process leaves `safe_output`'s wrapper to a finalizer after pytest
#: closed the captured output: nothing may be raised from it (Python 3.13 reports it)
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")

#: a well-formed command line per command, to which one garbage value is added
BASELINE = {
    "run": ["run"],
    "demo": ["demo"],
    "pair": ["pair", "--password-stdin"],
    "charge": ["charge", "--amount", "5", "--token", "vqr_x"],
    "reverse": ["reverse", "tx_abc"],
    "outbox": ["outbox", "list"],
    "history": ["history"],
    "report": ["report"],
    "prices": ["prices", "set", "1", "5"],
    "print": ["print", "receipt", "tx_abc"],
    "display": ["display", "preview", "--state", "paid", "--text"],
    "cashier": ["cashier", "list"],
    "shift": ["shift", "x"],
    "decode": ["decode", "a.png"],
    "doctor": ["doctor"],
    "verify": ["verify"],
    "metrics": ["metrics", "--once"],
    "simulator": ["simulator"],
}
garbage = (
    st.text(max_size=30)
    | st.sampled_from(["1.5", "-1", "0", "nan", "inf", "1e309", "9" * 40, "", "\udcff\udcfe"])
    | st.binary(max_size=12).map(lambda b: b.decode("utf-8", "surrogateescape"))
)


@functools.cache
def _parser(command: str) -> argparse.ArgumentParser:
    return build_parser(only=command)


def _valued_options() -> list[tuple[str, str]]:
    """(command, option) for every option that takes a checked value."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for command, subparser in sub.choices.items():
        for action in subparser._actions:
            if action.option_strings and (action.type is not None or action.choices):
                found.append((command, action.option_strings[-1]))
    return found


@pytest.mark.parametrize(("command", "option"), _valued_options())
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=garbage)
def test_a_malformed_value_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], command: str, option: str, value: str
) -> None:
    capsys.readouterr()
    words = [*BASELINE[command], f"{option}={value}"]
    with safe_output():
        try:
            args = _parser(command).parse_args(words)
        except SystemExit as exc:
            _, err = capsys.readouterr()
            assert exc.code == EXIT_USAGE, err
            assert one_usage_message(err) and "Traceback" not in err, err
            return
    for name, parsed in vars(args).items():
        if isinstance(parsed, str):
            parsed.encode("utf-8")  # no lone surrogate reaches a command
        if isinstance(parsed, float) and name not in ("vat_delay", "clock_offset"):
            assert math.isfinite(parsed) and parsed > 0, (name, parsed)
        if name == "amount":
            assert 1 <= parsed <= 1_000_000


@pytest.mark.parametrize("amount", ["1.5", "0", "1000001", "-5", "5e3", "abc", "1_000"])
def test_a_bad_amount_exits_64_not_declined(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, amount: str
) -> None:
    monkeypatch.setenv("QRPOS_LANGUAGE", "en")
    assert main(["charge", "--amount", amount, "--token", "vqr_x"]) == EXIT_USAGE
    _, err = capsys.readouterr()
    assert err.startswith("qrpos charge: argument --amount") and one_usage_message(err)
    assert "₮" in err or "tugrik" in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["charge", "--amount", "abc", "--token", "vqr_x"], "--amount аргумент: бүхэл төгрөг"),
        (["charge", "--token", "vqr_x"], "дараах аргумент заавал хэрэгтэй: --amount"),
        (["outbox", "list", "--bogus"], "танигдаагүй аргумент: --bogus"),
        (["chrge"], "буруу сонголт: 'chrge'"),
        (["--language", "mn", "reverse", "nonsense"], "гүйлгээний дугаар биш"),
    ],
)
def test_a_usage_error_is_told_in_the_configured_language(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    said: str,
) -> None:
    """The language is known before the command line is parsed (`--language`, else the
    environment and the config file), and argparse's own messages go through the
    catalogues: a kiosk configured for Mongolian answers a mistyped command in it."""
    monkeypatch.setenv("QRPOS_LANGUAGE", "en" if args[0] == "--language" else "mn")
    assert main(args) == EXIT_USAGE
    _, err = capsys.readouterr()
    assert said in " ".join(err.split()) and "(дэлгэрэнгүй: qrpos" in err, err
    assert one_usage_message(err), err


@pytest.mark.parametrize("language", ["mn", "en"])
@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["history", "--from", "yesterday"], "cli.usage.not_when"),
        (["history", "--to", "2026-13-01T08:00:00Z"], "cli.usage.not_when"),
        (["report", "--date", "yesterday"], "cli.usage.not_day"),
    ],
)
def test_a_day_or_time_not_understood_is_told_in_the_configured_language(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    key: str,
    language: str,
) -> None:
    """A day the command cannot read is a usage error in the kiosk's language, like any
    other malformed option (it was English, with a stray quote: "yesterday' is not ...")."""
    from qrpos.present.i18n import current_language, set_language, t

    monkeypatch.setenv("QRPOS_LANGUAGE", language)
    assert main(args) == EXIT_USAGE
    _, err = capsys.readouterr()
    was = current_language()
    set_language(language)
    try:
        said = t(key)
    finally:
        set_language(was)
    assert said in " ".join(err.split()) and one_usage_message(err), err
    assert "'" not in err and args[-1] not in err, err  # no quote, nothing echoed back


def _run(
    args: list[bytes], stdin: bytes = b"", tmp: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QRPOS_")}
    env["QRPOS_LANGUAGE"] = "en"  # the answers are read in English here (mn: test below)
    if tmp is not None:
        env["QRPOS_STATE_DIR"] = str(tmp)
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"qrpos.cli", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        env=env,
    )


def test_a_token_of_non_utf8_argv_bytes_is_a_usage_error(tmp_path: Path) -> None:
    done = _run([b"charge", b"--amount", b"5", b"--token", b"vqr_\xff\xfe"], tmp=tmp_path)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert b"Traceback" not in done.stderr and done.stderr.count(b"\n") == 1
    assert b"UTF-8" in done.stderr


def test_a_token_of_non_utf8_stdin_is_a_usage_error(tmp_path: Path) -> None:
    done = _run([b"charge", b"--amount", b"5", b"--token-stdin"], b"vqr_\xff\xfe\n", tmp_path)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert b"Traceback" not in done.stderr and done.stderr.count(b"\n") == 1


@pytest.mark.parametrize(
    ("language", "heading", "usage"),
    [("en", "exit codes:", "64 usage"), ("mn", "гарах кодууд:", "64 буруу хэрэглээ")],
)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_help_lists_its_exit_codes(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    language: str,
    heading: str,
    usage: str,
) -> None:
    monkeypatch.setenv("QRPOS_LANGUAGE", language)
    assert main([command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert heading in out and usage in out


def test_a_password_of_non_utf8_stdin_is_a_usage_error(tmp_path: Path) -> None:
    args = [b"pair", b"--username", b"term_abcdefgh", b"--base-url", b"http://127.0.0.1:9"]
    done = _run([*args, b"--password-stdin", b"--no-store"], b"vpt_\xff\xfe\n", tmp_path)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert b"Traceback" not in done.stderr and done.stderr.count(b"\n") == 1
    assert not (tmp_path / "terminal.toml").exists()  # nothing stored
