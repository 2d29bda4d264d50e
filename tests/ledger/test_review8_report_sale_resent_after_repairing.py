"""Review 8 (fixed): a sale that never reached the service under the old pairing, sent under the new
one after a re-pairing, is "on the service but unknown here" in the day's report.

Review 7's fix compares only the sales "sent under the current pairing"
(`listing.charges_between(pairing=)`, `endofday._charges_around`), but it tells them by
`charge_intent.username`, written once when the sale is stored (`ChargeDesk.charge`) and
never again. A sale whose sends never reached the service under terminal T1 (429s: not
`maybe_sent`) is still open and still sendable with its key when the kiosk is re-paired
to T2; `resolver.drive` sends it under T2 (only a `maybe_sent` sale goes to an
`other_terminal` review) and T2's 201 proves it charged: its row is in T2's history. The
report under T2 drops the sale (username T1) from the local side, so its own row in T2's
history is counted `unknownLocally`, the words for another install's charge or a charge
lost from the ledger. Before review 7's fix the sale was compared, and matched.

Through the real `qrpos` commands against the sandbox over loopback HTTP.
"""

from __future__ import annotations

import json
from pathlib import Path

from headless import cli_environment, qrpos
from qrpos.simulator import Sandbox, TerminalCredentials

AMOUNT = 4500


def test_a_sale_sent_under_the_new_pairing_is_known_in_its_report(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    before = cli_environment(tmp_path, live_url, terminal)
    wallet = sandbox.create_wallet(10_000)
    # every send of the sale is turned away with a 429 under T1: nothing reaches the service
    sandbox.arm_fault("rate_limit", count=10**6, operation="charge", retry_after=0.2)
    sale = qrpos(before, "charge", "--amount", str(AMOUNT), "--token", wallet.qr_token,
                 "--deadline", "2")  # fmt: skip
    assert sale.returncode == 3, sale.stdout + sale.stderr
    assert sandbox.transactions() == []
    sandbox.clear_faults()
    # the owner re-pairs the kiosk to another terminal of the merchant; the sale goes out
    t2 = sandbox.create_terminal("m_demo")
    after = cli_environment(tmp_path, live_url, t2)
    resolved = qrpos(after, "outbox", "resolve", "--deadline", "20")
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    [tx] = sandbox.transactions()
    assert tx.wallet_id == wallet.wallet_id
    listed = qrpos(after, "outbox", "list", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["state"], row["charged"], row["transactionID"]) == ("approved", True, tx.id), row

    out = qrpos(after, "report", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    day = json.loads(out.stdout)
    assert day["charges"] == {"count": 1, "grossMNT": AMOUNT}, day
    rec = day["reconciliation"]
    # the kiosk's own sale, charged under T2 and in T2's history, is known here
    assert (rec["matched"], rec["unknownLocally"]["count"]) == (1, 0), rec
