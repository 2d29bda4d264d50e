"""One end-of-day for a shop with several tills: the sum of their `qrpos report --json`.

Each till is its own terminal and sees only its own history, so the owner's total is the
sum of the tills' reports of the *same* local day. Refused (with a message naming the
file): reports of different days, of the same day over different windows (a till set to
another time zone counts another 24 hours), of another kind (an X or a Z, whose fields
are not a day's), the same till twice, a file that is not such a report. A report made
before reports said their kind (no `kind`) is taken as an end of day when it has the
day's window.
The merged JSON has the same shape plus `tills`, the terminals (and files) it covers.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrpos.errors import QrposError
from qrpos.reports.csv_export import spreadsheet_safe
from qrpos.reports.endofday import REPORT_KIND
from qrpos.said import os_reason, say
from qrpos.statedir import write_durable

#: (section, field) pairs that are summed
SUMMED = (
    ("charges", "count"),
    ("charges", "grossMNT"),
    ("reversed", "count"),
    ("reversed", "amountMNT"),
    ("vat", "pending"),
    ("vat", "issued"),
    ("vat", "voided"),
)


class MergeError(QrposError):
    """The reports cannot be merged; the message says which file and why."""


@dataclass(frozen=True)
class TillReport:
    """One till's report as read from its file."""

    path: Path
    terminal: str
    data: dict[str, Any]


def read_report(path: Path) -> TillReport:
    """Read and check one till's `qrpos report --json` output."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MergeError(
            say(
                "merge.cannot_read",
                "{path}: cannot be read ({why})",
                path=str(path),
                why=os_reason(exc),
            )
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise MergeError(say("merge.not_json", "{path}: not JSON", path=str(path))) from None
    kind = data.get("kind", REPORT_KIND) if isinstance(data, dict) else REPORT_KIND
    if kind != REPORT_KIND:
        raise MergeError(
            say(
                "merge.other_kind",
                "{path}: a report of another kind ({kind}), not a day's `qrpos report --json`",
                path=str(path),
                kind=str(kind)[:40],
            )
        )
    if not isinstance(data, dict) or not isinstance(data.get("date"), str):
        raise MergeError(
            say(
                "merge.no_date",
                "{path}: not a `qrpos report --json` report (no date)",
                path=str(path),
            )
        )
    terminal = data.get("terminal")
    if not isinstance(terminal, str) or not terminal:
        raise MergeError(
            say(
                "merge.no_till",
                "{path}: the report names no till (made by an older qrpos? run "
                "`qrpos report --json` on the till again)",
                path=str(path),
            )
        )
    for section, field in SUMMED:
        number = data.get(section, {}).get(field) if isinstance(data.get(section), dict) else None
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise MergeError(
                say(
                    "merge.not_a_count",
                    "{path}: {name} is missing or not a count",
                    path=str(path),
                    name=f"{section}.{field}",
                )
            )
    return TillReport(path, terminal, data)


def merge(paths: list[Path]) -> dict[str, Any]:
    """The tills' totals summed; refuses mismatched days and a till given twice."""
    if not paths:
        raise MergeError(say("merge.none", "no report given"))
    tills = [read_report(p) for p in paths]
    days = sorted({t.data["date"] for t in tills})
    if len(days) > 1:
        which = "; ".join(f"{t.path}: {t.data['date']}" for t in tills)
        raise MergeError(
            say("merge.days_differ", "the reports are of different days ({which})", which=which)
        )
    windows = {_window(t) for t in tills}
    if len(windows) > 1:
        which = "; ".join(
            f"{t.path}: {' .. '.join(str(part) for part in _window(t))}" for t in tills
        )
        raise MergeError(
            say(
                "merge.windows_differ",
                "the reports count different hours of the day (another time zone?): {which}",
                which=which,
            )
        )
    seen: dict[str, Path] = {}
    for till in tills:
        if till.terminal in seen:
            raise MergeError(
                say(
                    "merge.twice",
                    "till {till} is given twice ({first} and {second})",
                    till=till.terminal,
                    first=str(seen[till.terminal]),
                    second=str(till.path),
                )
            )
        seen[till.terminal] = till.path
    first = tills[0].data
    out: dict[str, Any] = {
        "date": first["date"],
        "from": first.get("from"),
        "to": first.get("to"),
        "charges": {},
        "reversed": {},
        "vat": {},
    }
    if "timezone" in first:
        out["timezone"] = first["timezone"]
    for section, field in SUMMED:
        out[section][field] = sum(t.data[section][field] for t in tills)
    out["tills"] = [
        {
            "terminal": t.terminal,
            "file": str(t.path),
            "charges": t.data["charges"],
            "reversed": t.data["reversed"],
            "shifts": _shifts_of(t),
        }
        for t in tills
    ]
    out["cashiers"] = _by_cashier(out["tills"])
    return out


def _window(till: TillReport) -> tuple[object, object, object]:
    """The span of time a report counts: its `from`, `to` and time zone."""
    return (till.data.get("from"), till.data.get("to"), till.data.get("timezone"))


#: what a shift adds to its cashier's line
CASHIER_FIELDS = ("sales", "sales_mnt", "reversed", "reversed_mnt", "refunds_made_mnt")


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shifts_of(till: TillReport) -> list[dict[str, Any]]:
    """The till's shifts of the day (a report made before shifts has none)."""
    shifts = till.data.get("shifts", [])
    if not isinstance(shifts, list):
        return []
    return [
        shift
        for shift in shifts
        if isinstance(shift, dict)
        and isinstance(shift.get("cashier"), str)
        and all(_count(shift.get(f)) for f in CASHIER_FIELDS)
    ]


def _takings(shift: dict[str, Any], day: list[dict[str, Any]]) -> dict[str, int]:
    """A shift's figures as they stand now: the report's `now` (its Z plus every later
    correction of its sales); from a report made before `now`, the Z's own figures plus
    the corrections of its sales that the day's later Zs carry. The Z's figures alone
    would leave a sale open at its Z and charged since in no cashier's takings."""
    now = shift.get("now")
    if isinstance(now, dict) and all(_count(now.get(f)) for f in CASHIER_FIELDS):
        return {f: now[f] for f in CASHIER_FIELDS}
    out = {f: shift[f] for f in CASHIER_FIELDS}
    number = shift.get("z_number")
    if not _count(number):
        return out
    for later in day:
        fixes = later.get("corrections")
        for fix in fixes if isinstance(fixes, list) else ():
            if not isinstance(fix, dict) or fix.get("of_z") != number:
                continue
            if not (_count(fix.get("sales_mnt")) and _count(fix.get("reversed_mnt"))):
                continue
            was, then = fix.get("was"), fix.get("now")
            out["sales"] += (then == "charged") - (was == "charged")
            out["reversed"] += (then == "refunded") - (was == "refunded")
            out["sales_mnt"] += fix["sales_mnt"]
            out["reversed_mnt"] += fix["reversed_mnt"]
    return out


def _by_cashier(tills: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Each cashier's shifts summed over every till (a cashier may work at two), each
    shift's sales as their money stands now (`_takings`)."""
    out: dict[str, dict[str, int]] = {}
    for till in tills:
        for shift in till["shifts"]:
            line = out.setdefault(shift["cashier"], dict.fromkeys(("shifts", *CASHIER_FIELDS), 0))
            line["shifts"] += 1
            takings = _takings(shift, till["shifts"])
            for field in CASHIER_FIELDS:
                line[field] += takings[field]
    return out


def write_csv(merged: dict[str, Any], path: Path) -> None:
    """One row per till and a total row, published whole (`write_durable`)."""
    fields = ["date", "till", "sales", "grossMNT", "reversed", "reversedMNT"]
    text = io.StringIO(newline="")
    out = csv.writer(text)
    out.writerow(fields)
    rows = [(t["terminal"], t["charges"], t["reversed"]) for t in merged["tills"]]
    rows.append(("total", merged["charges"], merged["reversed"]))
    for name, charges, reversed_ in rows:
        out.writerow([merged["date"], spreadsheet_safe(name), charges["count"],
                      charges["grossMNT"], reversed_["count"],
                      reversed_["amountMNT"]])  # fmt: skip
    try:
        write_durable(path, text.getvalue().encode("utf-8"))
    except OSError as exc:
        raise MergeError(
            say(
                "merge.cannot_write",
                "{path}: cannot be written ({why})",
                path=str(path),
                why=os_reason(exc),
            )
        ) from None
