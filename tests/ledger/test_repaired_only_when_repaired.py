"""Issue 47: `repaired` is said only when the terminal was re-paired.

A 401 means dead credentials: the contract says stop retrying and re-pair. A refund kept
for re-pairing used to be moved back to `pending` and sent again on every pass
(`qrpos outbox resolve`, a second `qrpos reverse`), under the very password that had just
been rejected. Real `qrpos` processes against the sandbox over loopback HTTP; the
password is rotated on the service's dashboard, then the kiosk is re-paired.
"""

from __future__ import annotations

import json
from pathlib import Path

from headless import qrpos
from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials

EXIT_CREDENTIALS = 4


def _sends(env: dict[str, str], item: str) -> int:
    out = qrpos(env, "outbox", "show", item, "--json")
    assert out.returncode == 0, out.stderr
    return sum(1 for a in json.loads(out.stdout)["attempts"] if a["kind"] == "reverse")


def test_a_refund_kept_for_re_pairing_is_not_sent_again_until_the_terminal_is_re_paired(
    cli_env: dict[str, str], sandbox: Sandbox, terminal: TerminalCredentials, tmp_path: Path
) -> None:
    wallet = sandbox.create_wallet(10_000)
    sold = qrpos(cli_env, "charge", "--amount", "4500", "--token", wallet.qr_token)
    assert sold.returncode == 0, sold.stderr
    tx_id = json.loads(sold.stdout)["id"]
    new_password = sandbox.rotate_password(terminal.username)  # the dashboard's rotate
    kept = qrpos(cli_env, "reverse", tx_id)
    assert kept.returncode == EXIT_CREDENTIALS, (kept.stdout, kept.stderr)
    assert _sends(cli_env, "r1") == 1
    # not re-paired: no pass, and no second reverse, sends under the dead password
    for args in (("outbox", "resolve", "--deadline", "3"), ("reverse", tx_id)):
        qrpos(cli_env, *args)
        assert _sends(cli_env, "r1") == 1, args
    (refund,) = [r for r in _listed(cli_env) if r["kind"] != "charge"]
    assert refund["state"] == "credentials_rejected"
    assert sandbox.transaction(tx_id).status is spec.TxStatus.COMPLETED
    # re-paired (the new password in the systemd credential): the next pass refunds
    (tmp_path / "creds" / "qrpos-password").write_text(new_password + "\n")
    qrpos(cli_env, "outbox", "resolve", "--deadline", "10")
    (refund,) = [r for r in _listed(cli_env) if r["kind"] != "charge"]
    assert refund["state"] == "refunded", refund
    assert sandbox.transaction(tx_id).status is spec.TxStatus.REVERSED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000


def _listed(env: dict[str, str]) -> list[dict[str, object]]:
    out = qrpos(env, "outbox", "list", "--all", "--json")
    assert out.returncode == 0, out.stderr
    rows: list[dict[str, object]] = json.loads(out.stdout)
    return rows
