"""End-of-day arithmetic on the local (UTC+8) business day, and reconciliation.

No Textual here: the owner's screens and the CLI both call into this package.
"""

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
