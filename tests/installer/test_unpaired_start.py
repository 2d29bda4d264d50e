"""Issue 48: an unpaired card starts the kiosk (on its pairing screen), and the pairing
screen's way to root is wired as the units and deploy/pair-store.sh say.

The unit loaded the password from an absolute path, which fails the unit when the file
does not exist (a fresh card): the kiosk never started. Now the credential is named
alone (systemd searches its credential stores and skips a missing one); the kiosk hands a
verified pairing to root over qrpos-pair.socket, whose connections run pair-store.sh,
which runs provision.sh (played here by a recording script: the seam is our own
command line and stdin).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from installer.test_systemd_unit import unit_settings
from qrpos.credentials import CREDENTIAL_NAME, CredentialStoreUnavailable
from qrpos.kiosk.pair_helper import hand_to_root

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "qrpos.service"
SOCKET = ROOT / "systemd" / "qrpos-pair.socket"
HELPER_UNIT = ROOT / "systemd" / "qrpos-pair@.service"
PAIR_STORE = ROOT / "deploy" / "pair-store.sh"
INSTALLED_HELPER = "/usr/local/sbin/qrpos-pair-store"
PASSWORD = "vpt_" + "A1b2" * 8

needs_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


def settings(path: Path, section: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s, k, v in unit_settings(path.read_text()):
        if s == section:
            out.setdefault(k, []).append(v)
    return out


def test_the_credential_is_optional_so_an_unpaired_card_starts() -> None:
    service = settings(UNIT, "Service")
    # a name, no path: a missing credential is skipped, not a failed unit
    assert service["LoadCredentialEncrypted"] == [CREDENTIAL_NAME]
    # nothing else may make the unit depend on the credential file existing
    unit = settings(UNIT, "Unit")
    conditions = [k for k in unit if k.startswith(("Condition", "Assert"))]
    assert conditions == []
    assert "ExecCondition" not in service


def test_the_kiosk_knows_roots_pairing_socket_and_wants_it() -> None:
    unit = settings(UNIT, "Unit")
    service = settings(UNIT, "Service")
    assert "qrpos-pair.socket" in " ".join(unit["Wants"])
    assert "qrpos-pair.socket" in " ".join(unit["After"])
    (listen,) = settings(SOCKET, "Socket")["ListenStream"]
    assert f"QRPOS_PAIR_SOCKET={listen}" in service["Environment"]
    # the kiosk may connect to it: AF_UNIX is allowed, and /run is not hidden from it
    assert "AF_UNIX" in service["RestrictAddressFamilies"][0].split()
    assert "InaccessiblePaths" not in service


def test_only_root_and_the_kiosks_group_may_hand_in_a_pairing() -> None:
    sock = settings(SOCKET, "Socket")
    assert sock["SocketUser"] == ["root"]
    assert sock["SocketGroup"] == settings(UNIT, "Service")["Group"]
    assert sock["SocketMode"] == ["0660"]
    assert sock["Accept"] == ["yes"]  # one qrpos-pair@.service per connection
    assert settings(SOCKET, "Install")["WantedBy"] == ["sockets.target"]
    helper = settings(HELPER_UNIT, "Service")
    assert helper["ExecStart"] == [INSTALLED_HELPER]
    assert helper["StandardInput"] == ["socket"]
    assert helper["StandardOutput"] == ["socket"]
    assert helper["StandardError"] == ["journal"]  # provision.sh's words: never the socket
    assert "User" not in helper  # root: systemd-creds encrypt needs the host key


@needs_analyze
def test_systemd_analyze_verify_accepts_the_socket_and_its_service(tmp_path: Path) -> None:
    (tmp_path / SOCKET.name).write_text(SOCKET.read_text())
    text = HELPER_UNIT.read_text()
    assert INSTALLED_HELPER in text
    (tmp_path / HELPER_UNIT.name).write_text(text.replace(INSTALLED_HELPER, str(PAIR_STORE)))
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(tmp_path / SOCKET.name)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    ours = [line for line in result.stderr.splitlines() if "qrpos-pair" in line]
    assert result.returncode == 0, result.stderr
    assert ours == [], "\n".join(ours)


def _fake_provision(tmp_path: Path, exit_status: int) -> Path:
    """A provision.sh that records its arguments and stdin, and exits as told."""
    script = tmp_path / "provision"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > "{tmp_path}/args"\n'
        f'cat > "{tmp_path}/stdin"\n'
        f"exit {exit_status}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _pair_store(
    tmp_path: Path, given: str, exit_status: int = 0
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "QRPOS_PROVISION": str(_fake_provision(tmp_path, exit_status)),
    }
    return subprocess.run(
        ["bash", str(PAIR_STORE)], input=given, capture_output=True, text=True, env=env, timeout=30
    )


def test_pair_store_hands_the_password_to_provision_on_stdin_only(tmp_path: Path) -> None:
    result = _pair_store(tmp_path, f"https://pay.example.mn\nterm_ab12cd34\n{PASSWORD}\n")
    assert result.stdout == "ok\n"
    args = (tmp_path / "args").read_text().splitlines()
    assert args == [
        "--base-url",
        "https://pay.example.mn",
        "--username",
        "term_ab12cd34",
        "--no-pin",
        "--no-restart",
    ]
    assert (tmp_path / "stdin").read_text() == PASSWORD + "\n"
    assert PASSWORD not in result.stderr  # the journal hears the username, not the secret
    assert "term_ab12cd34" in result.stderr


def test_pair_store_relays_provisions_refusal(tmp_path: Path) -> None:
    result = _pair_store(tmp_path, f"https://pay.example.mn\nterm_ab12cd34\n{PASSWORD}\n", 4)
    assert result.stdout == "failed 4\n"


@pytest.mark.parametrize(
    "given",
    [
        "",
        "https://pay.example.mn\nterm_ab12cd34\n",  # no password line
        f"ftp://pay.example.mn\nterm_ab12cd34\n{PASSWORD}\n",
        f"https://pay.example.mn\n--no-pin\n{PASSWORD}\n",  # not a username: no option
    ],
    ids=["nothing", "no-password", "not-http", "option-as-username"],
)
def test_pair_store_refuses_malformed_input_without_running_provision(
    tmp_path: Path, given: str
) -> None:
    result = _pair_store(tmp_path, given)
    assert result.stdout == "failed 64\n"
    assert not (tmp_path / "args").exists()


def test_the_kiosk_says_how_to_fix_a_missing_pairing_socket(tmp_path: Path) -> None:
    with pytest.raises(CredentialStoreUnavailable) as caught:
        hand_to_root(tmp_path / "absent.sock", "https://pay.example.mn", "term_ab12cd34", PASSWORD)
    words = str(caught.value)
    assert "systemctl enable --now qrpos-pair.socket" in words
    assert PASSWORD not in words and PASSWORD not in repr(caught.value)


def test_a_line_break_cannot_smuggle_a_fourth_line_to_root(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as caught:
        hand_to_root(tmp_path / "absent.sock", "https://x.mn\n--evil", "term_ab12cd34", PASSWORD)
    assert PASSWORD not in str(caught.value)
