"""`qrpos verify --token …` end to end, as a subprocess against a live sandbox.

The password reaches the command the way systemd hands it over: a CREDENTIALS_DIRECTORY
holding qrpos-password. The sandbox issues and voids VAT receipts after a short delay;
the command only charges, lists and reverses (it never calls /_sim).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from installer.conftest import LiveSimulator, qrpos_env


def verify(
    tmp_path: Path, sim: LiveSimulator, token: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "verify", "--token", token,
         "--base-url", sim.url, "--username", sim.username,
         "--state-dir", str(tmp_path / "state"), "--poll-interval", "0.2",
         "--vat-timeout", "20", *args],
        capture_output=True, text=True, timeout=90,
        env=qrpos_env(tmp_path, CREDENTIALS_DIRECTORY=str(sim.credentials_dir(tmp_path))),
    )  # fmt: skip


def test_verify_passes_end_to_end_and_refunds_the_wallet(
    tmp_path: Path, live_simulator: LiveSimulator
) -> None:
    token = live_simulator.new_wallet_token(10_000)
    result = verify(tmp_path, live_simulator, token, "--amount", "3")
    print(result.stdout, result.stderr)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    steps = ["[charge] approved", "[history] found", "[reverse] refunded", "[vat] issued",
             "[vat] voided", "VERIFY PASSED"]  # fmt: skip
    positions = [out.index(s) for s in steps]
    assert positions == sorted(positions)
    assert token not in out + result.stderr  # only the last 4 characters are shown
    assert live_simulator.password not in out + result.stderr
    # the wallet got its 3 MNT back, and the history agrees
    wallets = httpx.get(
        f"{live_simulator.url}/v1/transactions",
        auth=(live_simulator.username, live_simulator.password),
    ).json()
    (tx,) = [t for t in wallets["transactions"] if t["id"] in out]
    assert tx["status"] == "REVERSED"
    assert tx["vatStatus"] == "voided"
    assert tx["vatReceiptID"]


def test_spent_token_is_refused_with_exit_2_and_nothing_to_reverse(
    tmp_path: Path, live_simulator: LiveSimulator
) -> None:
    token = live_simulator.new_wallet_token(10_000)
    first = verify(tmp_path / "a", live_simulator, token)
    assert first.returncode == 0, first.stderr
    again = verify(tmp_path / "b", live_simulator, token)
    assert again.returncode == 2
    assert "VERIFY FAILED: the charge was not approved: code already used" in again.stderr
    assert "[reverse]" not in again.stdout


def test_verify_without_credentials_names_the_fix(
    tmp_path: Path, live_simulator: LiveSimulator
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "verify", "--token", "vqr_x",
         "--base-url", live_simulator.url, "--username", live_simulator.username,
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=60, env=qrpos_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 1
    assert "provision.sh" in result.stderr


def test_verify_speaks_the_configured_language(
    tmp_path: Path, live_simulator: LiveSimulator
) -> None:
    token = live_simulator.new_wallet_token(10_000)
    creds = str(live_simulator.credentials_dir(tmp_path))
    result = subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "verify", "--token", token,
         "--base-url", live_simulator.url, "--username", live_simulator.username,
         "--state-dir", str(tmp_path / "state"), "--poll-interval", "0.2",
         "--vat-timeout", "20", "--amount", "3"],
        capture_output=True, text=True, timeout=90,
        env=qrpos_env(tmp_path, CREDENTIALS_DIRECTORY=creds, QRPOS_LANGUAGE="mn"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    steps = ["[charge] зөвшөөрөгдсөн", "олдлоо", "[reverse]", "[vat] гарсан", "[vat] хүчингүй",
             "ШАЛГАЛТ АМЖИЛТТАЙ"]  # fmt: skip
    positions = [result.stdout.index(s) for s in steps]
    assert positions == sorted(positions)
    assert "approved" not in result.stdout and "VERIFY" not in result.stdout
