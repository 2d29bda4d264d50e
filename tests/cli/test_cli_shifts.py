"""`qrpos cashier` and `qrpos shift` as processes against the sandbox over loopback: two
cashiers take turns with `qrpos charge` sales, each Z reconciles with the service's
history and never changes, a wrong PIN pauses like the manager's, PINs never printed."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from headless import cli_environment, fed, qrpos
from qrpos import manager_pin
from qrpos.simulator import Sandbox, TerminalCredentials

#: the cashiers' PINs: twelve digits, so the check that no state file holds one in clear
#: cannot be tripped by a random id or hash (four digits turned up in a hex one by chance)
BAT_PIN = "135792468013"
SARAA_PIN = "246813579024"


def charge(env: dict[str, str], sandbox: Sandbox, amount: int, balance: int = 100_000) -> int:
    wallet = sandbox.create_wallet(balance)
    done = qrpos(env, "charge", "--amount", str(amount), "--token", wallet.qr_token)
    return done.returncode


def test_two_cashiers_a_day_of_shifts_from_the_command_line(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    env = cli_environment(tmp_path, live_url, terminal)
    done = qrpos(env, "cashier")
    assert done.returncode == 0 and "sells without shifts" in done.stdout
    assert fed(env, f"{BAT_PIN}\n", "cashier", "add", "Bat", "--pin-stdin").returncode == 0
    assert fed(env, f"{SARAA_PIN}\n", "cashier", "add", "Saraa", "--pin-stdin").returncode == 0
    refused = fed(env, "12\n", "cashier", "add", "Tuya", "--pin-stdin")
    assert refused.returncode == 1 and "4 to 12 digits" in refused.stderr

    # cashiers, but nobody on: refused as the kiosk refuses it, nothing sent
    wallet = sandbox.create_wallet(10_000)
    refused = qrpos(env, "charge", "--amount", "500", "--token", wallet.qr_token)
    assert refused.returncode == 1 and "no shift is open" in refused.stderr
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000
    assert fed(env, f"{BAT_PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    assert charge(env, sandbox, 4_500) == 0
    assert charge(env, sandbox, 12_000) == 0
    assert charge(env, sandbox, 9_000, balance=10) == 2  # declined
    x = json.loads(qrpos(env, "shift", "x", "--json").stdout)
    assert (x["cashier"], x["sales"], x["sales_mnt"], x["not_charged"]) == ("Bat", 2, 16_500, 1)
    # Saraa cannot open over Bat's shift; Bat closes with his own PIN
    busy = fed(env, f"{SARAA_PIN}\n", "shift", "open", "Saraa", "--pin-stdin")
    assert busy.returncode == 1 and "Bat's shift is open" in busy.stderr
    z1 = fed(env, f"{BAT_PIN}\n", "shift", "close", "--pin-stdin", "--json")
    assert z1.returncode == 0, z1.stderr
    first = json.loads(z1.stdout)
    assert (first["z_number"], first["sales"], first["sales_mnt"]) == (1, 2, 16_500)
    assert first["reconciliation"]["done"] and first["reconciliation"]["matched"] == 2

    assert fed(env, f"{SARAA_PIN}\n", "shift", "open", "saraa", "--pin-stdin").returncode == 0
    assert charge(env, sandbox, 7_000) == 0
    manager_pin.set_pin(Path(env["QRPOS_STATE_DIR"]), "8642")
    text = fed(env, "0000\n", "shift", "close", "--manager", "--pin-stdin")
    assert text.returncode == 1 and "wrong" in text.stderr.lower()  # not the manager PIN
    z2 = qrpos(env, "shift", "close", "--pin-stdin")  # no PIN on stdin: refused
    assert z2.returncode == 1
    z2 = fed(env, f"{SARAA_PIN}\n", "shift", "close", "--pin-stdin")
    assert z2.returncode == 0 and "Z 2 · Saraa" in z2.stdout, z2.stdout
    assert "1 matched" in z2.stdout

    # Z 1 reads as it was taken, in JSON and CSV; the list has both
    again = qrpos(env, "shift", "z", "1", "--json", "--csv", str(tmp_path / "z1.csv"))
    assert json.loads(again.stdout) == first
    [row] = list(csv.DictReader((tmp_path / "z1.csv").open()))
    assert (row["z_number"], row["cashier"], row["sales_mnt"]) == ("1", "Bat", "16500")
    listed = json.loads(qrpos(env, "shift", "list", "--json").stdout)
    assert [r["z_number"] for r in listed] == [1, 2]
    assert sum(r["sales_mnt"] for r in listed) == 23_500

    # nothing a person typed as a PIN is ever printed or kept in clear
    state = Path(env["QRPOS_STATE_DIR"])
    everything = "".join(p.read_bytes().decode("latin-1") for p in state.rglob("*") if p.is_file())
    assert BAT_PIN not in everything and SARAA_PIN not in everything


def test_a_wrong_cashier_pin_pauses_like_the_managers(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    env = cli_environment(tmp_path, live_url, terminal)
    assert fed(env, "1357\n", "cashier", "add", "Bat", "--pin-stdin").returncode == 0
    answers = [fed(env, "9999\n", "shift", "open", "Bat", "--pin-stdin") for _ in range(3)]
    assert [a.returncode for a in answers] == [1, 1, 1]
    assert "try again in" in answers[-1].stderr.lower() or "wait" in answers[-1].stderr.lower()
    paused = fed(env, "1357\n", "shift", "open", "Bat", "--pin-stdin")  # right, but paused
    assert paused.returncode == 1
    assert "9999" not in "".join(a.stderr + a.stdout for a in answers)
    assert qrpos(env, "shift", "x").returncode == 1  # still no shift open


def test_a_cashier_named_like_a_formula_is_written_inert_to_csv(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    env = cli_environment(tmp_path, live_url, terminal)
    assert fed(env, "1357\n", "cashier", "add", "=1+1", "--pin-stdin").returncode == 0
    assert fed(env, "1357\n", "shift", "open", "=1+1", "--pin-stdin").returncode == 0
    done = qrpos(env, "shift", "list", "--csv", str(tmp_path / "shifts.csv"))
    assert done.returncode == 0, done.stderr
    [row] = list(csv.DictReader((tmp_path / "shifts.csv").open()))
    assert row["cashier"] == "'=1+1"


def test_a_refund_stopped_by_a_dead_password_shows_as_waiting_on_the_x(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    """`qrpos reverse TX` after the terminal's password was rotated: the service answers
    401, the refund is kept for the re-pairing (exit 4), and `qrpos shift x --json` counts
    it among the refunds waiting, not in no line (it counted only refunds being sent)."""
    env = cli_environment(tmp_path, live_url, terminal)
    assert fed(env, f"{BAT_PIN}\n", "cashier", "add", "Bat", "--pin-stdin").returncode == 0
    assert fed(env, f"{BAT_PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    wallet = sandbox.create_wallet(10_000)
    sold = qrpos(env, "charge", "--amount", "4500", "--token", wallet.qr_token)
    assert sold.returncode == 0, sold.stderr
    sandbox.rotate_password(terminal.username)
    stopped = qrpos(env, "reverse", json.loads(sold.stdout)["id"])
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr
    x = json.loads(qrpos(env, "shift", "x", "--json").stdout)
    assert (x["refunds_made"], x["refunds_pending"], x["sales"]) == (0, 1, 1), x
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - 4_500
