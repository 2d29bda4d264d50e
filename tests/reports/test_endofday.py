"""End-of-day arithmetic over a stream of transactions."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from reports_factory import tx

from qrpos.reports.endofday import DayTally
from qrpos.reports.localday import local_day_of, local_hour_of
from qrpos.service import Transaction

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


@st.composite
def rows_around_the_day(draw: st.DrawFn) -> Transaction:
    """A charge within a day either side of DAY, its createdAt in any UTC spelling."""
    start = datetime(2024, 5, 1, 16, tzinfo=UTC)
    moment = start + timedelta(microseconds=draw(st.integers(-86_400_000_000, 2 * 86_400_000_000)))
    digits = draw(st.sampled_from(["", f"{moment:%f}", f"{moment:%f}999", f"{moment:%f}000"]))
    text = "{:%Y-%m-%d}{}{:%H:%M:%S}{}{}".format(
        moment,
        draw(st.sampled_from("Tt ")),
        moment,
        f".{digits}" if digits else "",
        draw(st.sampled_from(["Z", "z", "+00:00", "-00:00"])),
    )
    return msgspec.convert(
        {
            "id": "tx_p",
            "amountMNT": draw(st.integers(1, 1_000_000)),
            "status": draw(st.sampled_from(["COMPLETED", "REVERSED"])),
            "type": "CHARGE",
            "vatReceiptID": "",
            "vatStatus": "pending",
            "createdAt": text,
        },
        Transaction,
    )


@given(st.lists(rows_around_the_day(), max_size=30))
def test_the_text_lookup_counts_exactly_what_the_zone_database_says(
    rows: list[Transaction],
) -> None:
    tally = DayTally(DAY)
    counted = tally.add_all(rows)
    eod = tally.result()
    mine = [r for r in rows if local_day_of(r.created_at) == DAY]
    done = [r for r in mine if r.is_completed]
    assert counted == len(mine)
    assert (eod.charges_count, eod.gross_mnt) == (len(done), sum(r.amount_mnt for r in done))
    for hour in eod.hourly:
        in_hour = [r for r in done if local_hour_of(r.created_at) == hour.hour]
        assert (hour.count, hour.gross_mnt) == (len(in_hour), sum(r.amount_mnt for r in in_hour))
