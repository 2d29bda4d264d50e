"""End-of-day arithmetic over a stream of transactions."""

from __future__ import annotations

from datetime import UTC, date, datetime

from reports_factory import tx

from qrpos.reports.endofday import DayTally

DAY = date(2024, 5, 2)


def test_gross_counts_completed_charges_of_the_local_day_only() -> None:
    tally = DayTally(DAY)
    rows = [
        tx(datetime(2024, 5, 1, 15, 59, 59, tzinfo=UTC), 1_000),  # previous local day
        tx(datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC), 2_000),  # 00:00 local: counted
        tx(datetime(2024, 5, 2, 3, 30, tzinfo=UTC), 3_500, vat="issued", receipt="R1"),
        tx(datetime(2024, 5, 2, 4, 0, tzinfo=UTC), 700, status="REVERSED", vat="voided"),
        tx(datetime(2024, 5, 2, 16, 0, 0, tzinfo=UTC), 9_000),  # next local day
    ]
    counted = [tally.add(r) for r in rows]
    eod = tally.result()
    assert counted == [False, True, True, True, False]
    assert (eod.charges_count, eod.gross_mnt) == (2, 5_500)
    assert (eod.reversed_count, eod.reversed_mnt) == (1, 700)
    assert (eod.vat_pending, eod.vat_issued, eod.vat_voided) == (1, 1, 1)


def test_hourly_takings_are_bucketed_by_local_hour() -> None:
    tally = DayTally(DAY)
    tally.add(tx(datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC), 2_000))  # 00 local
    tally.add(tx(datetime(2024, 5, 2, 4, 10, tzinfo=UTC), 1_500))  # 12 local
    tally.add(tx(datetime(2024, 5, 2, 4, 50, tzinfo=UTC), 500))  # 12 local
    tally.add(tx(datetime(2024, 5, 2, 5, 0, tzinfo=UTC), 800, status="REVERSED"))
    hourly = tally.result().hourly
    assert len(hourly) == 24
    assert (hourly[0].count, hourly[0].gross_mnt) == (1, 2_000)
    assert (hourly[12].count, hourly[12].gross_mnt) == (2, 2_000)
    assert hourly[13].gross_mnt == 0  # a reversed charge is not takings


def test_json_has_the_design_shape() -> None:
    tally = DayTally(DAY)
    tally.add(tx(datetime(2024, 5, 2, 1, 0, tzinfo=UTC), 12_500))
    out = tally.result().to_json()
    assert out["date"] == "2024-05-02"
    assert out["from"] == "2024-05-01T16:00:00.000000Z"
    assert out["to"] == "2024-05-02T16:00:00.000000Z"
    assert out["charges"] == {"count": 1, "grossMNT": 12_500}
    assert out["reversed"] == {"count": 0, "amountMNT": 0}
    assert out["vat"] == {"pending": 1, "issued": 0, "voided": 0}
