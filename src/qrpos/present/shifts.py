"""A shift's X or Z report in words, lines of at most 80 columns: the same on the
kiosk's shift screen and from `qrpos shift`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from qrpos.present.format import format_mnt, local_datetime
from qrpos.present.i18n import t
from qrpos.reports.localday import local_day_of
from qrpos.service.models import parse_rfc3339 as _parse


def report_lines(report: dict[str, Any], *, now: datetime | None = None) -> list[str]:
    """A report (X, Z or an open shift) as lines of at most 80 columns; with `now`, an
    open shift that began on an earlier local day says so."""
    opened = local_datetime(_parse(report["opened_at"]))
    if report.get("z_number"):
        closed = local_datetime(_parse(report["closed_at"]))
        by = t(f"cli.shift.by_{report['closed_by']}")
        head = t("cli.shift.z_head", number=report["z_number"], name=report["cashier"])
        span = f"{opened} – {closed} ({by})"
    else:
        head = t("cli.shift.x_head", name=report["cashier"])
        span = t("cli.shift.since", time=opened)
    lines = [head, f"  {span}"]
    if not report.get("z_number") and now is not None:
        began = local_day_of(_parse(report["opened_at"]))
        if began < local_day_of(now):
            lines.append("  " + t("cli.shift.across_days", day=began.isoformat()))

    def row(label: str, count: int, amount: int | None = None) -> None:
        money = f"{format_mnt(amount):>14}" if amount is not None else ""
        lines.append(f"  {label:<28}{count:>6}  {money}".rstrip())

    row(t("cli.shift.sales"), report["sales"], report["sales_mnt"])
    row(t("cli.shift.reversed"), report["reversed"], report["reversed_mnt"])
    row(t("cli.shift.not_charged"), report["not_charged"])
    row(t("cli.shift.refunds_made"), report["refunds_made"], report["refunds_made_mnt"])
    if report["refunds_pending"]:
        row(t("cli.shift.refunds_pending"), report["refunds_pending"])
    for key in ("held", "in_review", "unsettled"):
        for sale in report.get(key, ()):
            lines.append(
                "  "
                + t(
                    f"cli.shift.{key}",
                    intent=sale["intent"],
                    amount=format_mnt(sale["amount_mnt"]),
                )
            )
    for fix in report.get("corrections", ()):
        lines.extend("  " + line for line in correction_lines(fix))
    rec = report.get("reconciliation")
    if rec is not None and rec.get("done"):
        lines.append(
            "  "
            + t(
                "cli.shift.reconciled",
                matched=rec["matched"],
                missing=rec["missingOnService"]["count"],
                unknown=rec["unknownLocally"]["count"],
            )
        )
    elif rec is not None:
        why = "unpaired" if rec.get("why") == "unpaired" else "offline"
        lines.append("  " + t(f"cli.shift.not_reconciled.{why}"))
    return lines


def _signed(amount: int) -> str:
    return ("+" if amount > 0 else "-" if amount < 0 else "") + format_mnt(abs(amount))


def correction_lines(fix: dict[str, Any]) -> list[str]:
    """A correction on a Z: the earlier Z's sale whose money moved, from what to what,
    and what that changes in the figures (a Z taken before issue 47 names the outcome)."""
    if "was" not in fix:
        return [
            t(
                "cli.shift.correction",
                intent=fix["intent"],
                z=fix["of_z"],
                outcome=t(f"cli.shift.outcome.{fix['outcome']}"),
                amount=format_mnt(fix["amount_mnt"]),
            )
        ]
    return [
        t(
            "cli.shift.correction_of",
            intent=fix["intent"],
            z=fix["of_z"],
            amount=format_mnt(fix["amount_mnt"]),
        ),
        "  "
        + t(
            "cli.shift.correction_moved",
            was=t(f"cli.shift.money.{fix['was']}"),
            now=t(f"cli.shift.money.{fix['now']}"),
        ),
        "  "
        + t(
            "cli.shift.correction_change",
            sales=_signed(int(fix["sales_mnt"])),
            reversed=_signed(int(fix["reversed_mnt"])),
        ),
    ]
