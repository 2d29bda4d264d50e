"""Nothing a service says can drive the installer's terminal.

A hostile service on loopback answers every request with text full of control
characters (ANSI CSI and OSC sequences, C1 controls, bidi overrides, line separators);
each command that prints service text runs against it, and its stdout and stderr must
carry none of them raw.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from qrpos.cli import main
from qrpos.redact import terminal_safe
from qrpos.simulator.server import serve_in_thread

#: a command run in-process leaves `safe_output`'s wrapper to a finalizer after pytest
#: closed the captured output: nothing may be raised from it (Python 3.13 reports it)
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")

UNSAFE = {"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"}
ESCAPES = ["\x1b]0;owned\x07", "\x1b[2J\x1b[H", "\x9b31m", "\u202eexe.txt", "\u2028", "\x00"]
hostile_text = st.lists(
    st.sampled_from(ESCAPES)
    | st.text(st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Lu", "Ll"]), max_size=8),
    min_size=1,
    max_size=6,
).map("".join)


@dataclass
class Reply:
    status: int = 400
    text: str = "bad"
    page: bool = False


def _raw_chars(output: str) -> set[str]:
    return {c for c in output if c not in "\n\t" and unicodedata.category(c) in UNSAFE}


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[Reply, str]]:
    reply = Reply()

    async def answer(request: Request) -> Response:
        if reply.page:
            row = {
                "id": "tx_" + reply.text,
                "amountMNT": 5,
                "status": "COMPLETED",
                "type": "CHARGE",
                "vatReceiptID": reply.text,
                "vatStatus": "issued",
                "terminalID": "ter_" + reply.text,
                "createdAt": "2025-03-01T04:00:00.123456Z",
            }
            body = json.dumps({"transactions": [row], "nextCursor": ""})
            return Response(body, 200, media_type="application/json")
        return Response(reply.text + "\n", reply.status, media_type="text/plain; charset=utf-8")

    app = Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST"])])
    with serve_in_thread(app) as url:
        yield reply, url


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hostile: tuple[Reply, str]) -> Reply:
    creds = tmp_path / "creds"
    creds.mkdir(exist_ok=True)
    (creds / "qrpos-password").write_text("vpt_" + "p" * 32 + "\n")
    (tmp_path / "empty.toml").write_text("")
    for name, value in {
        "CREDENTIALS_DIRECTORY": str(creds),
        "QRPOS_BASE_URL": hostile[1],
        "QRPOS_USERNAME": "term_abcdefgh",
        "QRPOS_STATE_DIR": str(tmp_path / "state"),
        "QRPOS_CONFIG": str(tmp_path / "empty.toml"),
        "QRPOS_REQUEST_TIMEOUT": "5",
        "QRPOS_LANGUAGE": "en",
    }.items():
        monkeypatch.setenv(name, value)
    return hostile[0]


COMMANDS = {
    "charge": (["charge", "--amount", "5", "--token", "vqr_abcd", "--deadline", "1"], False),
    "reverse": (["reverse", "tx_abc", "--deadline", "1"], False),
    "history": (["history", "--limit", "5"], True),
    "history-refused": (["history", "--limit", "5"], False),
}


@pytest.mark.parametrize("status", [400, 403, 409, 418])
@pytest.mark.parametrize("command", sorted(COMMANDS))
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=hostile_text)
def test_service_text_reaches_the_terminal_escaped(
    env: Reply, capsys: pytest.CaptureFixture[str], command: str, status: int, text: str
) -> None:
    argv, as_page = COMMANDS[command]
    env.status, env.text, env.page = status, text, as_page
    main(argv)
    out, err = capsys.readouterr()
    assert not _raw_chars(out + err), (out, err)


def test_an_osc_title_sequence_in_a_refusal_is_shown_as_text(
    env: Reply, capsys: pytest.CaptureFixture[str]
) -> None:
    env.status, env.text, env.page = 400, "\x1b]0;pwned\x07 forbidden", False
    main(["charge", "--amount", "5", "--token", "vqr_abcd", "--deadline", "1"])
    out, err = capsys.readouterr()
    assert "\\u001b]0;pwned\\u0007 forbidden" in out + err and "\x1b" not in out + err


@given(st.text())
def test_terminal_safe_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    shown = terminal_safe(text)
    assert not _raw_chars(shown)
    assert terminal_safe(shown) == shown  # idempotent: escapes are plain text


@given(st.text(st.characters(categories=["L", "N", "P", "S", "Zs"])))
def test_printable_text_mongolian_included_passes_unchanged(text: str) -> None:
    assert terminal_safe(text) == text
