"""End-of-day arithmetic on the local (UTC+8) business day, and reconciliation.

No Textual here: the owner's screens and the CLI both call into this package.
"""

from typing import TYPE_CHECKING

from qrpos.lazy import lazy_exports

if TYPE_CHECKING:
    from qrpos.reports.csv_export import CsvExport, ExportError
    from qrpos.reports.endofday import DayTally, EndOfDay, HourTakings, end_of_day
    from qrpos.reports.localday import (
        LOCAL_TZ,
        day_window,
        local_day_of,
        parse_day,
        to_local,
        today,
    )
    from qrpos.reports.reconcile import (
        ChargeBook,
        LocalCharge,
        Reconciliation,
        ServiceOnlyCharge,
        local_charges,
    )

__all__ = [
    "LOCAL_TZ",
    "ChargeBook",
    "CsvExport",
    "DayTally",
    "EndOfDay",
    "ExportError",
    "HourTakings",
    "LocalCharge",
    "Reconciliation",
    "ServiceOnlyCharge",
    "day_window",
    "end_of_day",
    "local_charges",
    "local_day_of",
    "parse_day",
    "to_local",
    "today",
]

#: where each export lives: its module is loaded when the name is first read
_WHERE = {
    "ChargeBook": ".reconcile",
    "CsvExport": ".csv_export",
    "DayTally": ".endofday",
    "EndOfDay": ".endofday",
    "ExportError": ".csv_export",
    "HourTakings": ".endofday",
    "LOCAL_TZ": ".localday",
    "LocalCharge": ".reconcile",
    "Reconciliation": ".reconcile",
    "ServiceOnlyCharge": ".reconcile",
    "day_window": ".localday",
    "end_of_day": ".endofday",
    "local_charges": ".reconcile",
    "local_day_of": ".localday",
    "parse_day": ".localday",
    "to_local": ".localday",
    "today": ".localday",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
