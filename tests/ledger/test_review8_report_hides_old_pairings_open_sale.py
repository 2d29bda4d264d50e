"""Review 8 (fixed): after a re-pairing, the day's report no longer names a sale of the day whose
outcome is unknown because it went out under the old pairing: the reconciliation says
"unresolved: 0" (clean) while the sale waits for a person.

Review 7's fix drops every sale of another pairing from the reconciliation's local side
(`listing.charges_between(pairing=)`, `endofday._charges_around`), to stop calling the old
terminal's charges "missing" from the new terminal's history. But `Reconciler` takes its
third list, "unresolved (an intent whose outcome is not known yet: the owner must look at
it)", from the same local side, and that list does not compare anything with the history:
an open sale of the old pairing is as unknown as any. docs/screens.md: "only the sales
sent under the current pairing are compared"; the unresolved are not a comparison.

Through the real `qrpos` commands against the sandbox over loopback HTTP: sale B under
terminal T1 commits, its reply lost and the history unreadable (`qrpos charge` exits 3);
the owner re-pairs the kiosk to T2; the day's report under T2.
"""

from __future__ import annotations

import json
from pathlib import Path

from headless import cli_environment, qrpos
from qrpos.simulator import Sandbox, TerminalCredentials

AMOUNT = 4500


def test_the_report_after_a_repairing_still_names_the_old_pairings_open_sale(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    before = cli_environment(tmp_path, live_url, terminal)
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=10**6, operation="charge")
    sandbox.arm_fault("error_before_commit", count=10**6, operation="list")
    sale = qrpos(before, "charge", "--amount", str(AMOUNT), "--token", wallet.qr_token,
                 "--deadline", "2")  # fmt: skip
    assert sale.returncode == 3, sale.stdout + sale.stderr
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - AMOUNT  # charged, unknown
    sandbox.clear_faults()
    # the owner re-pairs the kiosk to another terminal of the merchant
    t2 = sandbox.create_terminal("m_demo")
    after = cli_environment(tmp_path, live_url, t2)
    listed = qrpos(after, "outbox", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["charged"] is None, row  # its outcome is not known

    out = qrpos(after, "report", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    rec = json.loads(out.stdout)["reconciliation"]
    # no false alarm about the old terminal's history (review 7) ...
    assert rec["missingOnService"]["count"] == 0, rec
    # ... and the sale whose money is unknown is still named for the owner
    assert rec["unresolved"]["count"] == 1, rec
    assert [item["id"] for item in rec["unresolved"]["items"]] == [row["id"]], rec
