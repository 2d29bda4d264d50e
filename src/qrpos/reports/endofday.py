"""End-of-day totals of one local day, added up one transaction at a time.

`DayTally` keeps only counters (24 hourly buckets and a handful of sums), so memory
does not grow with the number of rows; `EndOfDay` is the finished, immutable result that
the CLI (`qrpos report`) and the owner's screen both render.

Gross takings are the sum of `amountMNT` over `COMPLETED` charges, as the spec defines
them: not the payout (payouts settle weekly and net off reversals). A reversal is counted
on the day of the charge it reversed, since the history carries no reversal time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from qrpos import spec
from qrpos.reports.localday import LOCAL_TZ, day_window, in_window, local_hour_of
from qrpos.reports.reconcile import Reconciliation
from qrpos.service.models import Transaction, format_rfc3339

HOURS = 24
QUARTER = timedelta(minutes=15)


@dataclass(frozen=True)
class HourTakings:
    """Completed charges whose local time falls in one hour of the day."""

    hour: int
    count: int
    gross_mnt: int


@dataclass(frozen=True)
class EndOfDay:
    """The totals of one local day (see the module docstring for the definitions)."""

    day: date
    from_utc: datetime
    to_utc: datetime
    charges_count: int
    gross_mnt: int
    reversed_count: int
    reversed_mnt: int
    vat_pending: int
    vat_issued: int
    vat_voided: int
    hourly: tuple[HourTakings, ...]
    #: None when no local ledger was available to compare with
    reconciliation: Reconciliation | None = None
    #: rows of another type than CHARGE (a terminal should never see any); not counted
    ignored_rows: int = 0

    @property
    def vat_total(self) -> int:
        return self.vat_pending + self.vat_issued + self.vat_voided

    def to_json(self) -> dict[str, Any]:
        """The shape design.md fixes for `qrpos report --json`, plus hourly and
        reconciliation fields."""
        out: dict[str, Any] = {
            "date": self.day.isoformat(),
            "from": format_rfc3339(self.from_utc),
            "to": format_rfc3339(self.to_utc),
            "timezone": str(LOCAL_TZ),
            "charges": {"count": self.charges_count, "grossMNT": self.gross_mnt},
            "reversed": {"count": self.reversed_count, "amountMNT": self.reversed_mnt},
            "vat": {
                "pending": self.vat_pending,
                "issued": self.vat_issued,
                "voided": self.vat_voided,
            },
            "hourly": [
                {"hour": h.hour, "count": h.count, "grossMNT": h.gross_mnt} for h in self.hourly
            ],
        }
        if self.reconciliation is not None:
            out["reconciliation"] = self.reconciliation.to_json()
        return out


@dataclass
class DayTally:
    """Running totals for one local day; feed it every row of (at least) its window."""

    day: date
    from_utc: datetime = field(init=False)
    to_utc: datetime = field(init=False)
    charges_count: int = 0
    gross_mnt: int = 0
    reversed_count: int = 0
    reversed_mnt: int = 0
    vat: dict[spec.VatStatus, int] = field(default_factory=lambda: dict.fromkeys(spec.VatStatus, 0))
    hour_count: list[int] = field(default_factory=lambda: [0] * HOURS)
    hour_mnt: list[int] = field(default_factory=lambda: [0] * HOURS)
    ignored_rows: int = 0
    _quarter_hour: list[int] = field(init=False, repr=False, default_factory=list)

    def __post_init__(self) -> None:
        self.from_utc, self.to_utc = day_window(self.day)
        # local hour of each quarter-hour of the window, from the zone database: zone
        # offsets are whole quarter-hours, so this is exact (even on a DST day) and
        # spares a time-zone conversion per row
        self._quarter_hour = [
            local_hour_of(self.from_utc + QUARTER * q)
            for q in range(int((self.to_utc - self.from_utc) / QUARTER))
        ]

    def covers(self, tx: Transaction) -> bool:
        """True when the transaction belongs to this day."""
        return in_window(tx.created_at, self.from_utc, self.to_utc)

    def add(self, tx: Transaction) -> bool:
        """Count one row if it belongs to the day; returns whether it was counted."""
        if not self.covers(tx):
            return False
        if not tx.is_charge:
            self.ignored_rows += 1
            return False
        if tx.status is spec.TxStatus.COMPLETED:
            self.charges_count += 1
            self.gross_mnt += tx.amount_mnt
            hour = self._quarter_hour[(tx.created_at - self.from_utc) // QUARTER]
            self.hour_count[hour] += 1
            self.hour_mnt[hour] += tx.amount_mnt
        else:
            self.reversed_count += 1
            self.reversed_mnt += tx.amount_mnt
        if tx.vat_status is not None:
            self.vat[tx.vat_status] += 1
        return True

    def result(self, reconciliation: Reconciliation | None = None) -> EndOfDay:
        """The finished totals."""
        return EndOfDay(
            day=self.day,
            from_utc=self.from_utc,
            to_utc=self.to_utc,
            charges_count=self.charges_count,
            gross_mnt=self.gross_mnt,
            reversed_count=self.reversed_count,
            reversed_mnt=self.reversed_mnt,
            vat_pending=self.vat[spec.VatStatus.PENDING],
            vat_issued=self.vat[spec.VatStatus.ISSUED],
            vat_voided=self.vat[spec.VatStatus.VOIDED],
            hourly=tuple(
                HourTakings(hour=h, count=self.hour_count[h], gross_mnt=self.hour_mnt[h])
                for h in range(HOURS)
            ),
            reconciliation=reconciliation,
            ignored_rows=self.ignored_rows,
        )
