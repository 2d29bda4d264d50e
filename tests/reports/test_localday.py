"""The local business day of Mongolia (UTC+8) and its UTC window."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from qrpos.reports.localday import day_window, local_day_of, local_hour_of, parse_day


def test_local_day_starts_at_1600z_of_the_previous_utc_day() -> None:
    start, end = day_window(date(2024, 5, 2))
    assert start == datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC)
    assert end == datetime(2024, 5, 2, 16, 0, 0, tzinfo=UTC)


def test_instants_either_side_of_1600z_fall_on_different_local_days() -> None:
    assert local_day_of(datetime(2024, 5, 1, 15, 59, 59, tzinfo=UTC)) == date(2024, 5, 1)
    assert local_day_of(datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC)) == date(2024, 5, 2)
    assert local_hour_of(datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC)) == 0
    assert local_hour_of(datetime(2024, 5, 1, 15, 59, 59, tzinfo=UTC)) == 23


def test_a_mistyped_date_gets_a_message_naming_the_format() -> None:
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_day("2024/05/02")
    assert parse_day("2024-05-02") == date(2024, 5, 2)
