"""`qrpos reverse` asks for the manager PIN as the refund screen does when the kiosk has
one: nothing is refunded without it, a wrong one is refused with the attempts left (the
screen's pause, shared), the right one on stdin refunds; the PIN never reaches output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from headless import qrpos
from qrpos import manager_pin
from qrpos.simulator import Sandbox, WalletInfo

PIN = "4826"


def reverse(env: dict[str, str], tx_id: str, stdin: str | None) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "qrpos.cli", "--language", "en", "reverse", tx_id]
    if stdin is not None:
        args.append("--pin-stdin")
    return subprocess.run(
        args, env=env, input=stdin or "", capture_output=True, text=True, timeout=60, check=False
    )


def test_a_refund_needs_the_manager_pin_when_the_kiosk_has_one(
    cli_env: dict[str, str], sandbox: Sandbox, wallet: WalletInfo
) -> None:
    manager_pin.set_pin(Path(cli_env["QRPOS_STATE_DIR"]), PIN)
    tx = json.loads(qrpos(cli_env, "charge", "--amount", "700", "--token", wallet.qr_token).stdout)
    none = reverse(cli_env, tx["id"], None)
    assert none.returncode == 1 and "--pin-stdin" in none.stderr
    wrong = reverse(cli_env, tx["id"], "0000\n")
    assert wrong.returncode == 1 and "Wrong PIN (2 attempts before a pause)" in wrong.stderr
    assert sandbox.transaction(tx["id"]).status == "COMPLETED"
    right = reverse(cli_env, tx["id"], f"{PIN}\n")
    assert right.returncode == 0, right.stderr
    assert sandbox.transaction(tx["id"]).status == "REVERSED"
    for done in (none, wrong, right):
        assert PIN not in done.stdout + done.stderr
