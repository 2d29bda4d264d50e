"""One pass over a local day's history: totals, reconciliation and the CSV together.

This is the single function behind both `qrpos report` and the owner's end-of-day
screen, so the two cannot disagree. The history is paged with the largest page the
service allows and each row is dropped once counted: memory stays flat in the rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from pathlib import Path

from qrpos import spec
from qrpos.reports.csv_export import CsvExport
from qrpos.reports.endofday import DayTally, EndOfDay
from qrpos.reports.paging import iter_window
from qrpos.reports.reconcile import LocalCharge, Reconciler
from qrpos.service import TerminalClient


async def end_of_day(
    client: TerminalClient,
    day: date,
    *,
    local: Iterable[LocalCharge] | None = None,
    csv_path: Path | None = None,
    limit: int = spec.LIST_LIMIT_MAX,
) -> EndOfDay:
    """The totals of local day `day`, read from the service's history.

    `local`: the ledger's charge intents around that day, for reconciliation (None: no
    reconciliation). `csv_path`: also export the day's rows there. Raises
    `qrpos.service.ListingFailed` when the history cannot be read (carrying the
    outcome), `qrpos.reports.ExportError` when the CSV cannot be written.
    """
    tally = DayTally(day)
    reconciler = (
        None
        if local is None
        else Reconciler(from_utc=tally.from_utc, to_utc=tally.to_utc, local=local)
    )
    from_, to = reconciler.fetch_window if reconciler else (tally.from_utc, tally.to_utc)
    if csv_path is None:
        async for tx in iter_window(client, from_, to, limit=limit):
            tally.add(tx)
            if reconciler is not None:
                reconciler.observe(tx)
        return tally.result(reconciler.result() if reconciler else None)
    with CsvExport(csv_path) as export:
        async for tx in iter_window(client, from_, to, limit=limit):
            if tally.add(tx):
                export.write(tx)
            if reconciler is not None:
                reconciler.observe(tx)
        eod = tally.result(reconciler.result() if reconciler else None)
        export.finish(eod)
    return eod
