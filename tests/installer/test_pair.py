"""`qrpos pair` as an installer runs it: a subprocess against the sandbox over loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from qrpos import manager_pin
from qrpos.config import PAIRING_FILE
from qrpos.simulator import Sandbox, TerminalCredentials

TESTS_DIR = Path(__file__).resolve().parents[1]
FILE_KEYRING = "installer.file_keyring.JsonFileKeyring"


def pair(
    tmp_path: Path,
    base_url: str,
    username: str,
    stdin: str,
    *extra: str,
    backend: str = FILE_KEYRING,
    language: str = "en",
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "PYTHONPATH": str(TESTS_DIR),
        "PYTHON_KEYRING_BACKEND": backend,
        "QRPOS_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
        "QRPOS_CONFIG": "",
        "QRPOS_LANGUAGE": language,
    }
    env.pop("CREDENTIALS_DIRECTORY", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "qrpos.cli",
            "pair",
            "--base-url",
            base_url,
            "--username",
            username,
            "--state-dir",
            str(tmp_path / "state"),
            "--password-stdin",
            *extra,
        ],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_live_credentials_are_stored_and_the_username_recorded(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    result = pair(tmp_path, live_url, terminal.username, terminal.password + "\n")
    assert result.returncode == 0, result.stderr
    stored = json.loads((tmp_path / "keyring.json").read_text())
    assert stored == {f"qrpos/{terminal.username}": terminal.password}
    pairing = (tmp_path / "state" / PAIRING_FILE).read_text()
    assert terminal.username in pairing
    assert terminal.password not in pairing
    assert terminal.password not in result.stdout + result.stderr


def test_rejected_password_exits_4_and_stores_nothing(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials, sandbox: Sandbox
) -> None:
    old = terminal.password
    sandbox.rotate_password(terminal.username)  # the old password is dead at once
    result = pair(tmp_path, live_url, terminal.username, old + "\n")
    assert result.returncode == 4
    assert "rejected" in result.stderr
    assert not (tmp_path / "keyring.json").exists()
    assert not (tmp_path / "state" / PAIRING_FILE).exists()


def test_no_keyring_exits_1_naming_provision_and_records_nothing(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    result = pair(
        tmp_path,
        live_url,
        terminal.username,
        terminal.password + "\n",
        backend="keyring.backends.fail.Keyring",
    )
    assert result.returncode == 1
    assert "verified, but no keyring can store the password" in result.stderr
    assert "provision.sh" in result.stderr
    assert terminal.password not in result.stderr
    assert not (tmp_path / "state" / PAIRING_FILE).exists()


def test_no_store_with_manager_pin_as_provision_runs_it(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    result = pair(
        tmp_path,
        live_url,
        terminal.username,
        f"{terminal.password}\n482913\n",
        "--no-store",
        "--manager-pin-stdin",
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "keyring.json").exists()
    state = tmp_path / "state"
    assert manager_pin.verify_pin(state, "482913")
    assert not manager_pin.verify_pin(state, "000000")
    assert "482913" not in (state / manager_pin.PIN_FILE).read_text()


def test_bad_pin_is_refused_before_anything_is_sent(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    result = pair(
        tmp_path,
        live_url,
        terminal.username,
        f"{terminal.password}\n12\n",
        "--no-store",
        "--manager-pin-stdin",
    )
    assert result.returncode == 1
    assert "4 to 12 digits" in result.stderr
    assert not (tmp_path / "state").exists()


def test_malformed_password_is_refused_without_echo(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    result = pair(tmp_path, live_url, terminal.username, "hunter2-secret\n")
    assert result.returncode == 1
    assert "not a terminal password" in result.stderr
    assert "hunter2" not in result.stderr


def test_unreachable_service_is_a_local_error(
    tmp_path: Path, terminal: TerminalCredentials
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = pair(tmp_path, f"http://127.0.0.1:{port}", terminal.username, terminal.password)
    assert result.returncode == 1
    assert "cannot reach the service" in result.stderr


def test_pairing_speaks_the_configured_language(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    """An installer on a kiosk set to Mongolian reads the pairing's result in Mongolian;
    a rejected pair too."""
    done = pair(tmp_path, live_url, terminal.username, terminal.password, language="mn")
    assert done.returncode == 0, done.stderr
    assert "холболоо" in done.stdout and "paired" not in done.stdout
    wrong = "vpt_" + "x" * 32
    refused = pair(tmp_path, live_url, terminal.username, wrong, language="mn")
    assert refused.returncode == 4
    assert "хүлээж авсангүй" in refused.stderr and "rejected" not in refused.stderr
