"""`qrpos cashier` and `qrpos shift`: who takes the sales, and the X and Z reports.

    qrpos cashier [list] [--json]          the till's cashiers (none: shifts are off)
    qrpos cashier add NAME [--pin-stdin]   a cashier with a PIN of 4 to 12 digits
    qrpos cashier rename NAME NEW
    qrpos cashier pin NAME [--pin-stdin]   a new PIN
    qrpos cashier remove NAME              their shifts and Z reports keep the name

    qrpos shift open NAME [--pin-stdin]    the cashier's PIN opens their shift
    qrpos shift x [--json] [--csv PATH]    the open shift now, and today's by cashier
    qrpos shift close [--manager] [--pin-stdin] [--json]
                                           the Z: closes the shift (the cashier's PIN, or
                                           the manager's), reconciled with the service
    qrpos shift z [NUMBER] [--json] [--csv PATH]   a Z exactly as it was taken
    qrpos shift list [--json] [--csv PATH] every shift

A PIN is asked at a terminal (unechoed) or read from the first line of stdin with
`--pin-stdin`, and goes through the same pause after wrong PINs as the manager's. Exit
codes: 0 done, 1 local error or the PIN refused, 64 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import getpass
import io
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_OK,
    SETUP_ERRORS,
    client_from_config,
    config_from_args,
    fail,
)
from qrpos.config import Config
from qrpos.present.format import format_mnt, local_datetime
from qrpos.present.i18n import t
from qrpos.present.shifts import report_lines
from qrpos.reports.csv_export import spreadsheet_safe
from qrpos.service.models import format_rfc3339 as _iso
from qrpos.statedir import write_durable


def register(sub: Any) -> None:
    c: argparse.ArgumentParser = sub.add_parser(
        "cashier", help=t("help.cashier.summary"), description=t("help.cashier.about")
    )
    c.set_defaults(func=run_cashier, action="list", json=False)
    actions = c.add_subparsers(dest="action", metavar="ACTION")
    lst = actions.add_parser("list", help=t("help.cashier.list"))
    lst.add_argument("--json", action="store_true", help=t("help.shift.json"))
    add = actions.add_parser("add", help=t("help.cashier.add"))
    add.add_argument("name", metavar="NAME", type=usage.text, help=t("help.cashier.name"))
    add.add_argument("--pin-stdin", action="store_true", help=t("help.shift.pin_stdin"))
    ren = actions.add_parser("rename", help=t("help.cashier.rename"))
    ren.add_argument("name", metavar="NAME", type=usage.text, help=t("help.cashier.name"))
    ren.add_argument("new_name", metavar="NEW", type=usage.text, help=t("help.cashier.new"))
    pin = actions.add_parser("pin", help=t("help.cashier.pin"))
    pin.add_argument("name", metavar="NAME", type=usage.text, help=t("help.cashier.name"))
    pin.add_argument("--pin-stdin", action="store_true", help=t("help.shift.pin_stdin"))
    rem = actions.add_parser("remove", help=t("help.cashier.remove"))
    rem.add_argument("name", metavar="NAME", type=usage.text, help=t("help.cashier.name"))

    s: argparse.ArgumentParser = sub.add_parser(
        "shift", help=t("help.shift.summary"), description=t("help.shift.about")
    )
    s.set_defaults(func=run_shift)
    shifts = s.add_subparsers(dest="action", metavar="ACTION", required=True)
    opening = shifts.add_parser("open", help=t("help.shift.open"))
    opening.add_argument("name", metavar="NAME", type=usage.text, help=t("help.cashier.name"))
    opening.add_argument("--pin-stdin", action="store_true", help=t("help.shift.pin_stdin"))
    x = shifts.add_parser("x", help=t("help.shift.x"))
    closing = shifts.add_parser("close", help=t("help.shift.close"))
    closing.add_argument("--manager", action="store_true", help=t("help.shift.manager"))
    closing.add_argument("--pin-stdin", action="store_true", help=t("help.shift.pin_stdin"))
    z = shifts.add_parser("z", help=t("help.shift.z"))
    z.add_argument(
        "number",
        nargs="?",
        metavar="NUMBER",
        type=usage.bounded_int(1, 10**9),
        help=t("help.shift.number"),
    )
    every = shifts.add_parser("list", help=t("help.shift.list"))
    for p in (x, closing, z, every):
        p.add_argument("--json", action="store_true", help=t("help.shift.json"))
    for p in (x, z, every):
        p.add_argument("--csv", metavar="PATH", type=Path, help=t("help.shift.csv"))


# --- PINs -------------------------------------------------------------------------------


def _read_pin(args: argparse.Namespace, prompt: str) -> str | None:
    if args.pin_stdin:
        return usage.read_stdin_line().strip()
    if sys.stdin.isatty():
        return getpass.getpass(f"{prompt}: ").strip()
    return None


def _cashier_refusal(config: Config, cashier: Any, pin: str | None) -> str | None:
    """Why `pin` does not open (or close) `cashier`'s shift, or None when it does."""
    from qrpos.present.owner import pin_refusal
    from qrpos.reports.pin_gate import PinGate

    if pin is None:
        return t("cli.shift.pin_stdin")
    if not pin:
        return t("reverse.pin_empty")
    gate = PinGate.for_cashier(config.state_dir, cashier.id, cashier.pin_record)
    return pin_refusal(gate.check(pin))


def _manager_refusal(config: Config, pin: str | None) -> str | None:
    from qrpos.present.owner import pin_refusal
    from qrpos.reports.pin_gate import PinGate

    if pin is None:
        return t("cli.shift.pin_stdin")
    if not pin:
        return t("reverse.pin_empty")
    return pin_refusal(PinGate(config.state_dir).check(pin))


# --- cashiers ---------------------------------------------------------------------------


def run_cashier(args: argparse.Namespace) -> int:
    from qrpos.ledger import Ledger, LedgerError
    from qrpos.ledger.shifts import (
        ShiftError,
        add_cashier,
        cashiers,
        find_cashier,
        remove_cashier,
        rename_cashier,
        set_cashier_pin,
    )
    from qrpos.manager_pin import PinError, pin_record

    try:
        config = config_from_args(args)
        ledger = Ledger.open(config.ledger_path)
    except (*SETUP_ERRORS, LedgerError) as exc:
        return fail(exc)
    try:
        if args.action in (None, "list"):
            found = cashiers(ledger)
            if args.json:
                out = [{"name": c.name, "since": _iso(c.created_at)} for c in found]
                print(json.dumps(out, ensure_ascii=False))
            elif not found:
                print(t("cli.shift.no_cashiers"))
            for cashier in [] if args.json else found:
                print(cashier.name)
            return EXIT_OK
        now = datetime.now(UTC)
        if args.action in ("add", "pin"):
            pin = _read_pin(args, t("cli.shift.new_pin_prompt", name=args.name))
            if pin is None:
                return fail(t("cli.shift.pin_stdin"))
            kept = pin_record(pin, cashier=True)
            if args.action == "add":
                cashier = add_cashier(ledger, args.name, kept, at=now)
                print(t("cli.shift.added", name=cashier.name))
            else:
                cashier = find_cashier(ledger, args.name)
                set_cashier_pin(ledger, cashier, kept)
                print(t("cli.shift.pin_set", name=cashier.name))
        elif args.action == "rename":
            cashier = rename_cashier(ledger, find_cashier(ledger, args.name), args.new_name)
            print(t("cli.shift.renamed", name=args.name, new=cashier.name))
        else:
            cashier = find_cashier(ledger, args.name)
            remove_cashier(ledger, cashier)
            print(t("cli.shift.removed", name=cashier.name))
        return EXIT_OK
    except (ShiftError, PinError, LedgerError) as exc:
        return fail(exc)
    finally:
        ledger.close()


# --- shifts -----------------------------------------------------------------------------


def run_shift(args: argparse.Namespace) -> int:
    from qrpos.ledger import Ledger, LedgerError
    from qrpos.ledger.shifts import ShiftError

    try:
        config = config_from_args(args)
        ledger = Ledger.open(config.ledger_path)
    except (*SETUP_ERRORS, LedgerError) as exc:
        return fail(exc)
    try:
        if args.action == "open":
            return _open(args, config, ledger)
        if args.action == "close":
            return _close(args, config, ledger)
        return _show(args, ledger)
    except (ShiftError, LedgerError, OSError) as exc:
        return fail(exc)
    finally:
        ledger.close()


def _open(args: argparse.Namespace, config: Config, ledger: Any) -> int:
    from qrpos.ledger.shifts import current_shift, find_cashier, open_shift

    cashier = find_cashier(ledger, args.name)
    already = current_shift(ledger)
    if already is not None:
        return fail(t("cli.shift.already_open", name=already.cashier))
    refusal = _cashier_refusal(config, cashier, _read_pin(args, t("cli.shift.pin_prompt")))
    if refusal is not None:
        return fail(refusal)
    shift = open_shift(ledger, cashier, at=datetime.now(UTC))
    print(t("cli.shift.opened", name=shift.cashier, time=local_datetime(shift.opened_at)))
    return EXIT_OK


def _close(args: argparse.Namespace, config: Config, ledger: Any) -> int:
    from qrpos.ledger.shifts import cashiers, current_shift, take_z

    shift = current_shift(ledger)
    if shift is None:
        return fail(t("cli.shift.none_open"))
    pin = _read_pin(args, t("reverse.pin_prompt") if args.manager else t("cli.shift.pin_prompt"))
    if args.manager:
        refusal = _manager_refusal(config, pin)
    else:
        cashier = next(
            (c for c in cashiers(ledger, include_removed=True) if c.id == shift.cashier_id), None
        )
        refusal = _cashier_refusal(config, cashier, pin) if cashier else t("cli.shift.none_open")
    if refusal is not None:
        return fail(refusal)
    now = datetime.now(UTC)
    reconciliation = _reconcile(config, ledger, shift.opened_at, now)
    closed = take_z(
        ledger,
        shift,
        at=now,
        by="manager" if args.manager else "cashier",
        reconciliation=reconciliation,
    )
    assert closed.z_report is not None
    if args.json:
        print(json.dumps(closed.z_report, ensure_ascii=False))
    else:
        print("\n".join(report_lines(closed.z_report)))
    return EXIT_OK


def _reconcile(config: Config, ledger: Any, from_utc: datetime, to_utc: datetime) -> dict[str, Any]:
    """The shift's sales against the service's history of its span; offline: why not."""
    from qrpos.credentials import CredentialsMissing
    from qrpos.ledger import ChargeDesk
    from qrpos.reports.endofday import shift_reconciliation

    try:
        client = client_from_config(config)
    except (*SETUP_ERRORS, CredentialsMissing):
        client = None

    async def run() -> dict[str, Any]:
        if client is None:
            return await shift_reconciliation(None, None, from_utc, to_utc)
        try:
            return await shift_reconciliation(
                client, ChargeDesk(ledger, client).listing, from_utc, to_utc
            )
        finally:
            await client.aclose()

    return asyncio.run(run())


def _show(args: argparse.Namespace, ledger: Any) -> int:
    from qrpos.ledger.shifts import by_cashier, current_shift, figures, shifts, z_reports

    reports: list[dict[str, Any]]
    if args.action == "x":
        shift = current_shift(ledger)
        if shift is None:
            return fail(t("cli.shift.none_open"))
        now = datetime.now(UTC)
        report = {
            "x": True,
            "shift": shift.id,
            "cashier": shift.cashier,
            "opened_at": _iso(shift.opened_at),
            "at": _iso(now),
            **figures(ledger, shift.id).to_json(),
        }
        today = [s for s in shifts(ledger) if _local_day(s.opened_at) == _local_day(now)]
        cashiers = {name: f.to_json() for name, f in by_cashier(ledger, today).items()}
        reports = [report]
        extra: dict[str, Any] = {"today_by_cashier": cashiers}
    elif args.action == "z":
        taken = z_reports(ledger)
        if not taken:
            return fail(t("cli.shift.no_z"))
        wanted = args.number or taken[-1]["z_number"]
        reports = [r for r in taken if r["z_number"] == wanted]
        if not reports:
            return fail(t("cli.shift.no_such_z", number=wanted))
        extra = {}
    else:
        reports = []
        for shift in shifts(ledger):
            if shift.z_report is not None:
                reports.append(shift.z_report)
            else:
                reports.append(
                    {
                        "shift": shift.id,
                        "cashier": shift.cashier,
                        "opened_at": _iso(shift.opened_at),
                        **figures(ledger, shift.id).to_json(),
                    }
                )
        extra = {}
    if args.csv is not None:
        _write_csv(args.csv, reports)
    if args.json:
        body: Any = reports[0] | extra if args.action != "list" else reports
        print(json.dumps(body, ensure_ascii=False))
        return EXIT_OK
    for report in reports:
        print("\n".join(report_lines(report, now=datetime.now(UTC))))
    if args.action == "x":
        print(t("cli.shift.today"))
        for name, shown in extra["today_by_cashier"].items():
            amount = format_mnt(shown["sales_mnt"])
            print(f"  {name:<24} {t('cli.shift.sales_n', count=shown['sales']):<16} {amount:>14}")
    return EXIT_OK


def _local_day(moment: datetime) -> str:
    from qrpos.reports.localday import local_day_of

    return local_day_of(moment).isoformat()


CSV_COLUMNS = (
    "z_number", "shift", "cashier", "opened_at", "closed_at", "closed_by", "sales",
    "sales_mnt", "reversed", "reversed_mnt", "not_charged", "refunds_made",
    "refunds_made_mnt", "refunds_pending", "in_review", "unsettled", "corrections", "held",
)  # fmt: skip


def _write_csv(path: Path, reports: list[dict[str, Any]]) -> None:
    """The shifts as CSV, published whole (`write_durable`: synced, renamed, the
    directory synced): a stick pulled out or a power cut leaves the old file or this one."""
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(CSV_COLUMNS)
    for report in reports:
        writer.writerow(
            [
                len(report.get(c, ())) if c in ("in_review", "unsettled", "corrections", "held")
                else spreadsheet_safe(report.get(c, ""))
                for c in CSV_COLUMNS
            ]
        )  # fmt: skip
    write_durable(path, text.getvalue().encode("utf-8"))
