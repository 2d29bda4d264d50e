"""End of day: the totals of one local day, computed by `end_of_day` for both the owner's
screen and `qrpos report`, so the two cannot disagree.

`end_of_day` makes one pass over the day's history (paged with the largest page the
service allows, the next page requested while the current one is counted), feeding
`DayTally`, the reconciliation against the ledger and the optional CSV together. The tally
keeps only counters (24 hourly buckets and a handful of sums) and each page is dropped
once counted, so memory does not grow with the number of rows; `EndOfDay` is the
finished, immutable result that both render.

Gross takings are the sum of `amountMNT` over `COMPLETED` charges, as the spec defines
them: not the payout (payouts settle weekly and net off reversals). A reversal is counted
on the day of the charge it reversed, since the history carries no reversal time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from qrpos import spec
from qrpos.reports.csv_export import CsvExport
from qrpos.reports.localday import LOCAL_TZ, day_window, in_window, local_hour_of
from qrpos.reports.paging import iter_pages
from qrpos.reports.reconcile import (
    MARGIN,
    ChargeBook,
    LocalCharge,
    Reconciler,
    Reconciliation,
    local_charges,
)
from qrpos.service import TerminalClient
from qrpos.service.models import Transaction, format_rfc3339

HOURS = 24
#: what `qrpos report --json` says it is, so that `report --merge` never sums a report of
#: another kind (a shift's X or Z, a tool's own JSON) into a day
REPORT_KIND = "end_of_day"
QUARTER = timedelta(minutes=15)
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
_MINUTE_TEXT = [f"{m:02d}" for m in range(60)]
_CHARGE = spec.TxType.CHARGE
_COMPLETED = spec.TxStatus.COMPLETED


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
        """The shape docs/architecture.md fixes for `qrpos report --json`, plus hourly and
        reconciliation fields."""
        out: dict[str, Any] = {
            "kind": REPORT_KIND,
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

    def totals_rows(self) -> list[tuple[str, object]]:
        """The totals as (name, value) rows, named after the JSON shape (the CSV's tail)."""
        return [
            ("date", self.day.isoformat()),
            ("from", format_rfc3339(self.from_utc)),
            ("to", format_rfc3339(self.to_utc)),
            ("charges.count", self.charges_count),
            ("charges.grossMNT", self.gross_mnt),
            ("reversed.count", self.reversed_count),
            ("reversed.amountMNT", self.reversed_mnt),
            ("vat.pending", self.vat_pending),
            ("vat.issued", self.vat_issued),
            ("vat.voided", self.vat_voided),
        ]


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
    _minute_hour: dict[str, int] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.from_utc, self.to_utc = day_window(self.day)
        # local hour of each quarter-hour of the window, from the zone database: zone
        # offsets are whole quarter-hours, so this is exact (even on a DST day)
        self._quarter_hour = [
            local_hour_of(self.from_utc + QUARTER * q)
            for q in range(int((self.to_utc - self.from_utc) / QUARTER))
        ]
        # ...and of each UTC minute, keyed as the service writes it ("2024-05-01T16:00"):
        # one slice and one look-up per row says both "in the day" and which hour
        offset = self.from_utc.minute  # 0 in Mongolia; any whole minute works
        minutes = int((self.to_utc - self.from_utc) / MINUTE)
        first_hour = self.from_utc.replace(minute=0)
        prefixes = [
            f"{first_hour + HOUR * h:%Y-%m-%dT%H}:" for h in range((offset + minutes + 59) // 60)
        ]
        keys = (
            prefixes[(offset + m) // 60] + _MINUTE_TEXT[(offset + m) % 60] for m in range(minutes)
        )
        self._minute_hour = {key: self._quarter_hour[m // 15] for m, key in enumerate(keys)}

    def _hour_of_other_spelling(self, tx: Transaction) -> int | None:
        """The local hour of a row whose `createdAt` uses another legal RFC 3339 spelling
        (``t`` or a space between date and time), None when outside the day."""
        created = tx.created_at
        if not in_window(created, self.from_utc, self.to_utc):
            return None
        return self._quarter_hour[(created - self.from_utc) // QUARTER]

    def add_all(self, rows: Iterable[Transaction]) -> int:
        """Count the rows that belong to the day; returns how many charges were counted.

        This loop runs once per row of the day (tens of thousands): plain look-ups only.
        """
        minute_hour = self._minute_hour.get
        hour_count, hour_mnt, vat = self.hour_count, self.hour_mnt, self.vat
        counted = completed = gross = reversed_count = reversed_mnt = 0
        for tx in rows:
            text = tx.created_at_text
            hour = minute_hour(text[:16])
            # a miss is outside the day when the text is in the service's own spelling
            if hour is None and (
                text[10] == "T" or (hour := self._hour_of_other_spelling(tx)) is None
            ):
                continue
            if tx.type is not _CHARGE:
                self.ignored_rows += 1
                continue
            counted += 1
            amount = tx.amount_mnt
            if tx.status is _COMPLETED:
                completed += 1
                gross += amount
                hour_count[hour] += 1
                hour_mnt[hour] += amount
            else:
                reversed_count += 1
                reversed_mnt += amount
            if tx.vat_status is not None:
                vat[tx.vat_status] += 1
        self.charges_count += completed
        self.gross_mnt += gross
        self.reversed_count += reversed_count
        self.reversed_mnt += reversed_mnt
        return counted

    def add(self, tx: Transaction) -> bool:
        """Count one row if it belongs to the day; returns whether it was counted."""
        return self.add_all((tx,)) == 1

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


async def end_of_day(
    client: TerminalClient,
    day: date,
    *,
    ledger: ChargeBook | None = None,
    csv_path: Path | None = None,
    limit: int = spec.LIST_LIMIT_MAX,
) -> EndOfDay:
    """The totals of local day `day`, read from the service's history.

    `ledger`: the outbox's charges (a `ChargeDesk`), read around the day for the
    reconciliation (None: no reconciliation). `csv_path`: also export the day's rows
    there. Raises `qrpos.service.ListingFailed` when the history cannot be read
    (carrying the outcome), `qrpos.reports.ExportError` when the CSV cannot be written.
    """
    tally = DayTally(day)
    reconciler = None
    if ledger is not None:
        local = await asyncio.to_thread(
            _charges_around, ledger, tally.from_utc, tally.to_utc, client.username
        )
        reconciler = Reconciler(from_utc=tally.from_utc, to_utc=tally.to_utc, local=local)
    from_, to = reconciler.fetch_window if reconciler else (tally.from_utc, tally.to_utc)
    pages = iter_pages(client, from_, to, limit=limit)
    if csv_path is None:
        async for rows in pages:
            tally.add_all(rows)
            if reconciler is not None:
                for tx in rows:
                    reconciler.observe(tx)
        return tally.result(reconciler.result() if reconciler else None)
    with CsvExport(csv_path) as export:
        async for rows in pages:
            for tx in rows:
                if tally.add(tx):
                    export.write(tx)
                if reconciler is not None:
                    reconciler.observe(tx)
        eod = tally.result(reconciler.result() if reconciler else None)
        export.finish(eod.totals_rows())
    return eod


async def reconcile_window(
    client: TerminalClient,
    ledger: ChargeBook,
    from_utc: datetime,
    to_utc: datetime,
    *,
    limit: int = spec.LIST_LIMIT_MAX,
) -> Reconciliation:
    """The ledger's charges of a window (a shift) against the service's history of it, as
    the end of day reconciles a day. Raises `ListingFailed` when the history cannot be read."""
    local = await asyncio.to_thread(_charges_around, ledger, from_utc, to_utc, client.username)
    reconciler = Reconciler(from_utc=from_utc, to_utc=to_utc, local=local)
    from_, to = reconciler.fetch_window
    async for rows in iter_pages(client, from_, to, limit=limit):
        for tx in rows:
            reconciler.observe(tx)
    return reconciler.result()


async def shift_reconciliation(
    client: TerminalClient | None,
    ledger: ChargeBook | None,
    from_utc: datetime,
    to_utc: datetime,
) -> dict[str, Any]:
    """What a Z keeps of its reconciliation: the window's comparison (``"done": true``), or
    why there is none (``"why"``: ``unpaired`` without a client, ``offline`` when the
    history could not be read)."""
    from qrpos.service import ListingFailed

    if client is None or ledger is None:
        return {"done": False, "why": "unpaired"}
    try:
        found = await reconcile_window(client, ledger, from_utc, to_utc)
    except ListingFailed:
        return {"done": False, "why": "offline"}
    return {"done": True, **found.to_json()}


def _charges_around(
    ledger: ChargeBook, from_utc: datetime, to_utc: datetime, pairing: str
) -> list[LocalCharge]:
    """The ledger's charges of the day and its margins, each saying whether it went out
    under `pairing`, the terminal whose history they are compared with (runs in a thread:
    SQLite). A sale sent under an earlier pairing is in another terminal's history: never
    "missing" from this one's, and still unresolved while its outcome is not known."""
    return local_charges(ledger.charges_between(from_utc - MARGIN, to_utc + MARGIN), pairing)
