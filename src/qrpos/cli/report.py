"""`qrpos report`: end-of-day totals of a local (UTC+8) day, from the service's history.

Same core function as the owner's end-of-day screen (`qrpos.reports.end_of_day`), so the
two show the same numbers. Exit codes: 0 done, 2 refused by the service, 3 the history
could not be read (try again), 4 credentials rejected, 1 local error (e.g. the CSV path).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_CREDENTIALS,
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNRESOLVED,
    SETUP_ERRORS,
    client_from_config,
    config_from_args,
    fail,
)
from qrpos.config import Config
from qrpos.present.format import format_mnt, group_thousands
from qrpos.present.i18n import t
from qrpos.present.owner import date_line, listing_failure, reconciliation_lines, summary_lines
from qrpos.reports import ChargeBook, EndOfDay, ExportError, end_of_day, today
from qrpos.reports.chart import hourly_rows
from qrpos.service import ListingFailed, TerminalClient
from qrpos.service.outcomes import BadRequest, CredentialsRejected, Refused

log = logging.getLogger("qrpos.cli.report")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "report",
        help=t("help.report.summary"),
        description=t("help.report.about"),
    )
    p.add_argument("--date", type=usage.local_day, help=t("help.report.date"))
    p.add_argument("--csv", type=Path, metavar="PATH", help=t("help.report.csv"))
    p.add_argument("--json", action="store_true", help=t("help.report.json"))
    p.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="FILE",
        help=t("help.report.merge"),
    )
    p.set_defaults(func=run)


def run_merge(args: argparse.Namespace) -> int:
    """`report --merge FILE...`: one total for several tills (qrpos.reports.merge)."""
    from qrpos.reports.merge import MergeError, merge, write_csv

    try:
        merged = merge(args.merge)
        if args.csv:
            write_csv(merged, args.csv)
    except MergeError as exc:
        return fail(exc, EXIT_LOCAL_ERROR)
    print(json.dumps(merged, ensure_ascii=False) if args.json else render_table(merged))
    return EXIT_OK


@contextlib.contextmanager
def outbox_desk(config: Config, client: TerminalClient) -> Iterator[ChargeBook | None]:
    """The outbox's charges for reconciliation, or None when there is no outbox here."""
    if not config.ledger_path.exists():
        yield None
        return
    from qrpos.ledger import ChargeDesk, Ledger, LedgerError

    try:
        ledger = Ledger.open(config.ledger_path)
    except LedgerError as exc:
        log.warning("no reconciliation: %s", exc)
        yield None
        return
    try:
        yield ChargeDesk(ledger, client).listing
    finally:
        ledger.close()


def render_text(eod: EndOfDay) -> str:
    """The totals for a person, in the configured language (the screen's words)."""
    lines = [f"{t('eod.title')} — {date_line(eod)}"]
    lines.extend(f"{label}: {value}" for label, value in summary_lines(eod))
    lines.extend(["", f"{t('eod.chart')}:"])
    for row in hourly_rows(eod.hourly, 40):
        lines.append(f"  {row.hour:02d} {row.bar:<40} {format_mnt(row.gross_mnt)}")
    lines.extend(["", f"{t('eod.reconciliation')}:"])
    lines.extend(f"  {line}" for line in reconciliation_lines(eod))
    return "\n".join(lines)


def render_table(merged: dict[str, Any]) -> str:
    """The merged day for a person: one line per till, the total, and each cashier's
    shifts summed over the tills; in the configured language."""
    lines = [t("cli.merge.title", day=merged["date"], count=len(merged["tills"]))]
    lines.append(
        f"{t('cli.merge.till'):<16} {t('cli.merge.sales'):>7} {t('cli.merge.gross'):>14} "
        f"{t('cli.merge.reversed'):>9} {t('cli.merge.reversed_mnt'):>13}"
    )

    def row(name: str, charges: dict[str, int], reversed_: dict[str, int]) -> str:
        return (
            f"{name[:16]:<16} {charges['count']:>7,} {charges['grossMNT']:>14,} "
            f"{reversed_['count']:>9,} {reversed_['amountMNT']:>13,}"
        )

    for till in merged["tills"]:
        lines.append(row(till["terminal"], till["charges"], till["reversed"]))
    lines.append(row(t("cli.merge.total"), merged["charges"], merged["reversed"]))
    vat = merged["vat"]
    lines.append(
        t("cli.merge.vat", issued=vat["issued"], pending=vat["pending"], voided=vat["voided"])
    )
    cashiers = merged.get("cashiers") or {}
    if cashiers:
        lines.append(
            f"{t('cli.merge.cashier'):<16} {t('cli.merge.shifts'):>7} "
            f"{t('cli.merge.sales'):>7} {t('cli.merge.gross'):>14} {t('cli.merge.refunded'):>9}"
        )
        for name, line in sorted(cashiers.items()):
            lines.append(
                f"{name[:16]:<16} {line['shifts']:>7,} {line['sales']:>7,} "
                f"{line['sales_mnt']:>14,} {line['reversed_mnt']:>9,}"
            )
    return "\n".join(lines)


def day_shifts(config: Config, day: date) -> list[dict[str, Any]]:
    """The Z reports of the shifts opened on `day` (local), and the open shift's figures
    now (``"open": true``); none without an outbox or cashiers."""
    if not config.ledger_path.exists():
        return []
    from qrpos.ledger import Ledger, LedgerError
    from qrpos.ledger.shifts import figures, shifts
    from qrpos.reports.localday import local_day_of

    try:
        ledger = Ledger.open(config.ledger_path)
    except LedgerError:
        return []
    try:
        out: list[dict[str, Any]] = []
        for shift in shifts(ledger):
            if local_day_of(shift.opened_at) != day:
                continue
            if shift.z_report is not None:
                # the Z as it was taken, and its sales' figures now (`now`: the Z plus
                # every later correction of its sales), which the roll-up's cashier
                # lines add up
                out.append({**shift.z_report, "now": figures(ledger, shift.id).to_json()})
            else:
                out.append(
                    {
                        "open": True,
                        "shift": shift.id,
                        "cashier": shift.cashier,
                        **figures(ledger, shift.id).to_json(),
                    }
                )
        return out
    finally:
        ledger.close()


async def _report(config: Config, day: date, csv_path: Path | None) -> EndOfDay:
    client = client_from_config(config)
    async with client:
        with outbox_desk(config, client) as desk:
            return await end_of_day(client, day, ledger=desk, csv_path=csv_path)


def run(args: argparse.Namespace) -> int:
    if args.merge:
        return run_merge(args)
    day = args.date or today(datetime.now(UTC))
    try:
        config = config_from_args(args)
        eod = asyncio.run(_report(config, day, args.csv))
    except SETUP_ERRORS as exc:
        return fail(exc)
    except ExportError as exc:
        return fail(exc, EXIT_LOCAL_ERROR)
    except ListingFailed as exc:
        outcome = exc.outcome
        if isinstance(outcome, CredentialsRejected):
            return fail(t("history.credentials"), EXIT_CREDENTIALS)
        if isinstance(outcome, BadRequest | Refused):
            return fail(t("eod.refused", message=outcome.message), EXIT_REFUSED)
        return fail(t("cli.report.unreadable", why=listing_failure(outcome)), EXIT_UNRESOLVED)
    if args.json:
        # the till's terminal, so `report --merge` can tell tills apart; its shifts of the
        # day, so the merge can say what each cashier took
        body = {**eod.to_json(), "terminal": config.username, "shifts": day_shifts(config, day)}
        print(json.dumps(body, ensure_ascii=False))
    else:
        print(render_text(eod))
    if args.csv:
        rows = eod.charges_count + eod.reversed_count
        print(t("eod.exported", rows=group_thousands(rows), path=args.csv), file=sys.stderr)
    return EXIT_OK
