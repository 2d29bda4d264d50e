"""The headless commands as an integrator runs them: a real `qrpos` process with a
systemd credential, a state dir of its own and the sandbox on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from qrpos.simulator import TerminalCredentials


def cli_environment(tmp_path: Path, url: str, terminal: TerminalCredentials) -> dict[str, str]:
    """The environment of a `qrpos` process: credential, state dir, sandbox URL, and
    English words (what these tests read; Mongolian, the default, has its own tests)."""
    creds = tmp_path / "creds"
    creds.mkdir(exist_ok=True)
    (creds / "qrpos-password").write_text(terminal.password + "\n")
    (tmp_path / "absent.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QRPOS_")}
    env.update(
        CREDENTIALS_DIRECTORY=str(creds),
        QRPOS_BASE_URL=url,
        QRPOS_USERNAME=terminal.username,
        QRPOS_STATE_DIR=str(tmp_path / "state"),
        QRPOS_CONFIG=str(tmp_path / "absent.toml"),
        QRPOS_REQUEST_TIMEOUT="2",
        QRPOS_LANGUAGE="en",
    )
    return env


def qrpos(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run `qrpos ARGS...` and wait for it."""
    return fed(env, "", *args)


def fed(env: dict[str, str], stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`qrpos ARGS` with `stdin` (a PIN)."""
    return subprocess.run(
        [sys.executable, "-m", "qrpos.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_usage_message(err: str, width: int = 80) -> bool:
    """Is `err` one usage error: a line, or a line and its continuations (indented by
    two), none wider than a Pi's console?"""
    from qrpos.cli.usage import cells

    lines = err.splitlines()
    return (
        err.endswith("\n")
        and bool(lines)
        and not lines[0].startswith(" ")
        and all(line.startswith("  ") for line in lines[1:])
        and all(cells(line) <= width for line in lines)
    )
