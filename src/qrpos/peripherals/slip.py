"""What a slip says, line by line, in the configured language: a sale, a refund, the end
of day, a test. No I/O and no drawing (`qrpos.peripherals.render` draws it).

A sale's slip is made from its settled transaction only (the service's own row: amount,
time, id, VAT receipt), never from what the cashier typed. The VAT receipt (ДДТД) is
issued by the service after the sale, so the slip printed at the till says "pending";
a reprint made once it is issued carries its number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from qrpos import spec
from qrpos.present.format import format_mnt, local_datetime
from qrpos.present.i18n import t
from qrpos.reports.endofday import EndOfDay
from qrpos.service.models import Transaction
from qrpos.service.models import parse_rfc3339 as _utc

Style = Literal["normal", "bold", "big", "small"]
Align = Literal["left", "center", "right"]
SlipKind = Literal["sale", "refund", "end_of_day", "test", "z"]


@dataclass(frozen=True)
class SlipLine:
    """One line: `text` on the left (or centred), `right` flush right on the same line."""

    text: str = ""
    right: str = ""
    style: Style = "normal"
    align: Align = "left"
    rule: bool = False  # a horizontal rule instead of text


@dataclass(frozen=True)
class Slip:
    """A slip's lines; `ref` names what it is of (a transaction id, a day)."""

    kind: SlipKind
    ref: str
    lines: tuple[SlipLine, ...] = field(default_factory=tuple)

    def to_json(self) -> str:
        return json.dumps(
            {"kind": self.kind, "ref": self.ref, "lines": [asdict(x) for x in self.lines]},
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> Slip:
        data: dict[str, Any] = json.loads(text)
        lines = tuple(SlipLine(**line) for line in data["lines"])
        return cls(data["kind"], data["ref"], lines)

    def plain(self, width: int = 32) -> str:
        """The slip as text `width` characters wide (the demo's virtual printer, logs)."""
        out = []
        for line in self.lines:
            if line.rule:
                out.append("-" * width)
            elif line.right:
                room = max(1, width - len(line.text) - len(line.right))
                out.append(f"{line.text}{' ' * room}{line.right}")
            elif line.align == "center":
                out.append(line.text.center(width).rstrip())
            elif line.align == "right":
                out.append(line.text.rjust(width))
            else:
                out.append(line.text)
        return "\n".join(out)


def _header(header: Sequence[str]) -> list[SlipLine]:
    lines = [SlipLine(h, style="bold", align="center") for h in header if h.strip()]
    return [*lines, SlipLine(rule=True)] if lines else []


def vat_line(tx: Transaction) -> SlipLine:
    """The VAT receipt (ДДТД): its number once issued, else where it stands."""
    if tx.vat_status == spec.VatStatus.ISSUED and tx.vat_receipt_id:
        return SlipLine(t("slip.vat"), tx.vat_receipt_id)
    status = tx.vat_status.value.lower() if tx.vat_status else "pending"
    return SlipLine(t("slip.vat"), t(f"slip.vat_status.{status}"))


def sale_slip(
    tx: Transaction, *, header: Sequence[str] = (), reprint_at: datetime | None = None
) -> Slip:
    """The customer's slip for a settled charge (a reprint says when it was reprinted)."""
    lines = [
        *_header(header),
        SlipLine(t("slip.terminal"), tx.terminal_id or "-"),
        SlipLine(t("slip.time"), local_datetime(tx.created_at)),
        SlipLine(rule=True),
        SlipLine(t("slip.sale"), style="bold", align="center"),
        SlipLine(format_mnt(tx.amount_mnt), style="big", align="center"),
        SlipLine(rule=True),
        SlipLine(t("slip.transaction")),
        SlipLine(tx.id, style="small"),
        vat_line(tx),
    ]
    if reprint_at is not None:
        lines.append(
            SlipLine(
                t("slip.reprint", time=local_datetime(reprint_at)), style="small", align="center"
            )
        )
    lines.append(SlipLine(t("slip.thanks"), align="center"))
    return Slip("sale", tx.id, tuple(lines))


def refund_slip(charge: Transaction, refunded_at: datetime, *, header: Sequence[str] = ()) -> Slip:
    """The slip of a full refund of `charge` (the wallet was credited the whole amount)."""
    lines = (
        *_header(header),
        SlipLine(t("slip.terminal"), charge.terminal_id or "-"),
        SlipLine(t("slip.time"), local_datetime(refunded_at)),
        SlipLine(rule=True),
        SlipLine(t("slip.refund"), style="bold", align="center"),
        SlipLine("-" + format_mnt(charge.amount_mnt), style="big", align="center"),
        SlipLine(rule=True),
        SlipLine(t("slip.refund_of")),
        SlipLine(charge.id, style="small"),
        SlipLine(t("slip.sale_time"), local_datetime(charge.created_at)),
    )
    return Slip("refund", charge.id, lines)


def end_of_day_slip(eod: EndOfDay, *, printed_at: datetime, header: Sequence[str] = ()) -> Slip:
    """The day's totals as the end-of-day report has them (gross takings, not a payout);
    a reconciliation that found differences says so, for the owner to look on screen."""
    lines = [
        *_header(header),
        SlipLine(t("slip.eod_title"), style="bold", align="center"),
        SlipLine(eod.day.isoformat(), align="center"),
        SlipLine(rule=True),
        SlipLine(t("slip.eod_sales", count=eod.charges_count), format_mnt(eod.gross_mnt)),
        SlipLine(t("slip.eod_refunds", count=eod.reversed_count), _minus(eod.reversed_mnt)),
        SlipLine(t("slip.eod_net"), format_mnt(eod.gross_mnt - eod.reversed_mnt), style="bold"),
        SlipLine(rule=True),
        SlipLine(t("slip.eod_vat_issued"), str(eod.vat_issued)),
        SlipLine(t("slip.eod_vat_pending"), str(eod.vat_pending)),
    ]
    if eod.reconciliation is not None and not eod.reconciliation.clean:
        lines.append(SlipLine(t("slip.eod_check"), style="bold"))
    lines.append(SlipLine(t("slip.printed", time=local_datetime(printed_at)), style="small"))
    return Slip("end_of_day", eod.day.isoformat(), tuple(lines))


def z_slip(report: Mapping[str, Any], *, header: Sequence[str] = ()) -> Slip:
    """A shift's Z report as it was taken (`qrpos.ledger.shifts.take_z`)."""
    opened = local_datetime(_utc(report["opened_at"]))
    closed = local_datetime(_utc(report["closed_at"]))
    lines = [
        *_header(header),
        SlipLine(t("slip.z_title", number=report["z_number"]), style="bold", align="center"),
        SlipLine(str(report["cashier"]), align="center"),
        SlipLine(opened, style="small", align="center"),
        SlipLine(closed, style="small", align="center"),
        SlipLine(rule=True),
        SlipLine(t("slip.eod_sales", count=report["sales"]), format_mnt(report["sales_mnt"])),
        SlipLine(
            t("slip.z_reversed", count=report["reversed"]), format_mnt(report["reversed_mnt"])
        ),
        SlipLine(
            t("slip.eod_refunds", count=report["refunds_made"]),
            _minus(report["refunds_made_mnt"]),
        ),
    ]
    open_sales = [*report.get("in_review", ()), *report.get("unsettled", ())]
    held = list(report.get("held", ()))
    if open_sales or held:
        lines.append(SlipLine(rule=True))
        for sale in held:
            lines.append(
                SlipLine(t("slip.z_held", intent=sale["intent"]), format_mnt(sale["amount_mnt"]))
            )
        for sale in open_sales:
            lines.append(
                SlipLine(t("slip.z_open", intent=sale["intent"]), format_mnt(sale["amount_mnt"]))
            )
    for fix in report.get("corrections", ()):
        if "now" not in fix:  # a Z taken before issue 47
            lines.append(
                SlipLine(
                    t("slip.z_correction", intent=fix["intent"], z=fix["of_z"]),
                    t(f"slip.z_outcome.{fix['outcome']}"),
                    style="small",
                )
            )
            continue
        lines.append(
            SlipLine(
                t("slip.z_correction", intent=fix["intent"], z=fix["of_z"]),
                t(f"slip.z_money.{fix['now']}"),
                style="small",
            )
        )
        for key, label in (
            ("sales_mnt", "slip.z_fix_sales"),
            ("reversed_mnt", "slip.z_fix_reversed"),
        ):
            if fix[key]:
                lines.append(SlipLine(t(label), _signed(int(fix[key])), style="small"))
    lines.append(SlipLine(rule=True))
    return Slip("z", f"z{report['z_number']}", tuple(lines))


def _signed(amount: int) -> str:
    """A correction's change: "+4,500 ₮" or "-4,500 ₮"."""
    return ("+" if amount > 0 else "-") + format_mnt(abs(amount))


def _minus(amount: int) -> str:
    """An amount taken back: "-4,500 ₮" (nothing taken back: "0 ₮", not "-0")."""
    return ("-" if amount else "") + format_mnt(amount)


def printer_test_slip(
    printed_at: datetime, *, header: Sequence[str] = (), paper_mm: int = 58
) -> Slip:
    """A slip that shows the printer works: every letter Mongolian needs, Ө and Ү too."""
    lines = (
        *_header(header),
        SlipLine(t("slip.test_title"), style="bold", align="center"),
        SlipLine(t("slip.test_paper", mm=paper_mm), align="center"),
        SlipLine(rule=True),
        SlipLine("АБВГДЕЁЖЗИЙКЛМНОӨП"),
        SlipLine("РСТУҮФХЦЧШЩЪЫЬЭЮЯ"),
        SlipLine("абвгдеёжзийклмноөп"),
        SlipLine("рстуүфхцчшщъыьэюя"),
        SlipLine("ABCDEFGHIJKLM abcdefghijklm"),
        SlipLine("NOPQRSTUVWXYZ nopqrstuv"),
        SlipLine("wxyz 0123456789 ₮ №"),
        SlipLine(t("slip.sale"), format_mnt(12_500), style="bold"),
        SlipLine(format_mnt(1_000_000), style="big", align="center"),
        SlipLine(t("slip.printed", time=local_datetime(printed_at)), style="small"),
    )
    return Slip("test", "test", lines)
