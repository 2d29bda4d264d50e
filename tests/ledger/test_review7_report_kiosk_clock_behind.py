"""Review 7 (fixed): a sale made while the kiosk's wall clock was a day behind (a Pi booted on its
saved time before NTP stepped it) is, in the day's report, "on the service but unknown
here", the words for another install or a charge lost from the ledger.

`reports.reconcile` places each sale in a day by `charge_intent.created_at`, the kiosk's
wall clock at the sale, and `ChargeDesk.listing.charges_between` reads only the sales whose
wall time falls in the day (with a 10-minute margin). The sale's own row, proven by its
201 (`tx_json`, the service's `createdAt`), is then not known to the reconciliation of the
day it was charged in: it is counted `unknownLocally`, and the day the kiosk's clock
said counts it `missingOnService`. docs/ledger.md, Time: NTP steps a Pi's clock "often by
hours" and a Pi has no battery clock; the ledger keeps money right across it, the report
does not.

Story (sandbox over real HTTP, the real desk and `reports.end_of_day`): the kiosk's wall
clock is 24 h behind; a sale is approved by its 201; the owner runs today's report.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_cli_clock_steps import LIBFAKETIME, stepped

from headless import qrpos
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.reports import end_of_day, today
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, WalletInfo

BEHIND = timedelta(days=1)


def _behind() -> datetime:
    return datetime.now(UTC) - BEHIND


async def test_a_sale_made_on_a_clock_a_day_behind_is_known_in_its_days_report(
    ledger: Ledger, http_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    desk = ChargeDesk(ledger, http_client, policy=RetryPolicy.testing(), clock=_behind)
    sold = await desk.charge(4500, wallet.qr_token, deadline_s=5)
    assert sold.charged and sold.transaction is not None, sold
    day = today(datetime.now(UTC))
    eod = await end_of_day(http_client, day, ledger=desk.listing)
    assert eod.charges_count == 1 and eod.gross_mnt == 4500, eod
    rec = eod.reconciliation
    assert rec is not None
    assert (rec.matched, rec.unknown_locally_count) == (1, 0), rec


@pytest.mark.skipif(LIBFAKETIME is None, reason="libfaketime is not installed")
def test_the_same_through_the_commands_a_kiosk_booted_a_day_behind(
    tmp_path: Path, cli_env: dict[str, str], sandbox: Sandbox
) -> None:
    """The same story through the commands a person runs: `qrpos charge` on a wall clock a
    day behind (libfaketime: the Pi booted on its saved time), then NTP sets it right and
    the owner runs `qrpos report --json` for today, and for the day the kiosk's clock
    said: the sale is matched on its real day, and not missing on the other."""
    env, _ = stepped(cli_env, tmp_path, "-1d")
    wallet = sandbox.create_wallet(10_000)
    sold = qrpos(env, "charge", "--amount", "4500", "--token", wallet.qr_token)
    assert sold.returncode == 0, sold.stderr
    tx = json.loads(sold.stdout)
    day = today(datetime.now(UTC))
    if today(datetime.fromisoformat(tx["createdAt"])) != day:
        pytest.skip("the sale and the report fell on two local days (midnight in UTC+8)")
    report = qrpos(cli_env, "report", "--json")  # the clock set right
    assert report.returncode == 0, report.stderr
    eod = json.loads(report.stdout)
    assert (eod["charges"]["count"], eod["charges"]["grossMNT"]) == (1, 4500), eod
    rec = eod["reconciliation"]
    assert rec["matched"] == 1, rec
    assert (rec["unknownLocally"]["count"], rec["missingOnService"]["count"]) == (0, 0), rec
    behind = (day - BEHIND).isoformat()
    report = qrpos(cli_env, "report", "--json", "--date", behind)
    assert report.returncode == 0, report.stderr
    rec = json.loads(report.stdout)["reconciliation"]
    assert rec["missingOnService"]["count"] == 0, rec
    assert (rec["matched"], rec["unknownLocally"]["count"]) == (0, 0), rec
