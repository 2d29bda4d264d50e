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

from datetime import UTC, datetime, timedelta

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
