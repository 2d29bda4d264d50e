"""Cells a spreadsheet would run as formulas are written inert, in every CSV qrpos writes.

The end of day's cells come from the service (a receipt number, an id), the merge's till
names from report files someone handed over: neither is trusted to be plain text. The
shifts' CSV is checked in `tests/cli/test_cli_shifts.py`."""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import pytest
from reports_factory import tx

from qrpos.reports.csv_export import CsvExport, spreadsheet_safe
from qrpos.reports.localday import day_window
from qrpos.reports.merge import write_csv

START, _ = day_window(datetime(2024, 5, 2).date())


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"])
def test_text_a_spreadsheet_would_run_is_written_inert(text: str) -> None:
    assert spreadsheet_safe(text) == "'" + text


@pytest.mark.parametrize("value", ["tx_abc", "ДДТД 123", "", 4500, -4500])
def test_plain_text_and_numbers_stay_as_they_are(value: object) -> None:
    assert spreadsheet_safe(value) == value


def test_a_receipt_number_like_a_formula_is_inert_in_the_day_csv(tmp_path: Path) -> None:
    target = tmp_path / "day.csv"
    hostile = '=HYPERLINK("http://x.invalid","receipt")'
    with CsvExport(target) as export:
        export.write(tx(START, 4_500, vat="issued", receipt=hostile))
        export.finish([("=total", 4_500)])
    lines = target.read_text(encoding="utf-8").splitlines()
    [row] = list(csv.DictReader(lines[: lines.index("")]))
    assert row["vatReceiptID"] == "'" + hostile
    assert row["amountMNT"] == "4500"
    assert lines[-1].startswith("'=total,")


def test_a_till_named_like_a_formula_is_inert_in_the_merged_csv(tmp_path: Path) -> None:
    target = tmp_path / "shop.csv"
    none = {"count": 0, "grossMNT": 0, "amountMNT": 0}
    merged = {
        "date": "2024-05-02",
        "tills": [{"terminal": "=cmd|'/c calc'!A0", "charges": none, "reversed": none}],
        "charges": none,
        "reversed": none,
    }
    write_csv(merged, target)
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert rows[0]["till"] == "'=cmd|'/c calc'!A0"
    assert rows[1]["till"] == "total"
