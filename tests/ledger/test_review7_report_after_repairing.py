"""Review 7 (fixed): after a re-pairing to another terminal mid-day, `qrpos report` says the
morning's charges, approved by the old terminal's own 201s, are "approved here but
missing on the service".

`reports.reconcile.Reconciler` expects every charged sale of the day with a transaction
id in the history it reads, and `ChargeDesk.listing.charges_between` hands it every sale
of the outbox, whatever pairing it went out under (`charge_intent.username`). The
history is the new terminal's only (the service scopes it to the credentials; docs/
ledger.md: "a new pairing is a new terminal"), so the old terminal's charges can never
be in it: each is reported missing on the service, a false alarm about money taken (the
owner reads: the kiosk says paid, the service has no such charge).

Through the real `qrpos` commands against the sandbox over loopback HTTP: a sale under
terminal T1, a re-pairing to T2 of the same merchant (the credentials the commands read),
a sale under T2, then the day's report.
"""

from __future__ import annotations

import json
from pathlib import Path

from headless import cli_environment, qrpos
from qrpos.simulator import Sandbox, TerminalCredentials


def test_the_report_after_a_repairing_never_calls_the_old_terminals_sale_missing(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    before = cli_environment(tmp_path, live_url, terminal)
    morning = sandbox.create_wallet(10_000)
    sold = qrpos(before, "charge", "--amount", "4500", "--token", morning.qr_token)
    assert sold.returncode == 0, sold.stdout + sold.stderr
    old_tx = json.loads(sold.stdout)["id"]
    # the owner re-pairs the kiosk to another terminal of the merchant
    t2 = sandbox.create_terminal("m_demo")
    after = cli_environment(tmp_path, live_url, t2)
    noon = sandbox.create_wallet(10_000)
    sold = qrpos(after, "charge", "--amount", "7000", "--token", noon.qr_token)
    assert sold.returncode == 0, sold.stdout + sold.stderr
    assert sandbox.transaction(old_tx).status == "COMPLETED"  # the morning's charge stands

    out = qrpos(after, "report", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    day = json.loads(out.stdout)
    missing = day["reconciliation"]["missingOnService"]
    text = qrpos(after, "report")
    assert text.returncode == 0, text.stderr
    assert missing["count"] == 0, (missing, text.stdout)
    assert "missing on the service" not in text.stdout, text.stdout
