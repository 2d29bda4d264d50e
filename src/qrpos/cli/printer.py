"""`qrpos print`: the receipt printer from the command line.

    qrpos print test [--preview out.png]            a test slip (every letter Mongolian needs)
    qrpos print receipt TX_ID [--preview out.png]   a copy of a sale's slip, as the
                                                    history has it now (its ДДТД once issued)
    qrpos print z [NUMBER] [--preview out.png]      a shift's Z report as it was taken
    qrpos print queue [--json]                      the kiosk's print queue, newest first

A slip is sent straight to the configured printer (`QRPOS_PRINTER`, `[printer] device`),
not through the kiosk's queue: the command says at once whether it printed. With
`--preview` the slip is drawn to a PNG instead, exactly as the paper would show it, and
no printer is needed. Exit codes: 0 printed (or drawn), 1 local error (no printer set, the
printer in trouble, no such sale), 3 the service unavailable and the sale not in the
cache, 4 credentials rejected, 64 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_CREDENTIALS,
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_UNRESOLVED,
    SETUP_ERRORS,
    client_from_config,
    config_from_args,
    refunds_landed_here,
    wrapped,
)
from qrpos.config import Config
from qrpos.present.i18n import t

#: how far back `print receipt` looks for a sale the cache does not hold
LOOK_BACK = timedelta(days=92)


def fail(message: str | BaseException, code: int = EXIT_LOCAL_ERROR) -> int:
    """`qrpos: message` on stderr, folded to the console (a printer's fix is long)."""
    from qrpos.present.words import error_words

    text = message if isinstance(message, str) else error_words(message).strip("'\"")
    print(wrapped(text, indent="  ", first="qrpos: "), file=sys.stderr)
    return code


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "print", help=t("help.print.summary"), description=t("help.print.about")
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    test = actions.add_parser("test", help=t("help.print.test.summary"))
    test.add_argument("--preview", metavar="PNG", type=Path, help=t("help.print.preview"))
    receipt = actions.add_parser("receipt", help=t("help.print.receipt.summary"))
    receipt.add_argument("tx_id", metavar="TX_ID", type=usage.tx_id, help=t("help.print.tx_id"))
    receipt.add_argument("--preview", metavar="PNG", type=Path, help=t("help.print.preview"))
    z = actions.add_parser("z", help=t("help.print.z.summary"))
    z.add_argument(
        "number",
        nargs="?",
        metavar="NUMBER",
        type=usage.bounded_int(1, 10**9),
        help=t("help.print.z.number"),
    )
    z.add_argument("--preview", metavar="PNG", type=Path, help=t("help.print.preview"))
    queue = actions.add_parser("queue", help=t("help.print.queue.summary"))
    queue.add_argument("--json", action="store_true", help=t("help.print.queue.json"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from qrpos.peripherals.printer import PrinterSettingError
    from qrpos.peripherals.printing import print_settings
    from qrpos.peripherals.slip import Slip, printer_test_slip, sale_slip, z_slip

    try:
        config = config_from_args(args)
        settings = print_settings(config.printer)
    except (*SETUP_ERRORS, PrinterSettingError) as exc:
        return fail(exc)
    if args.action == "queue":
        return _queue(config, as_json=args.json)
    now = datetime.now(UTC)
    slip: Slip
    if args.action == "test":
        slip = printer_test_slip(now, header=settings.header, paper_mm=settings.paper_mm)
    elif args.action == "z":
        report = _z_report(config, args.number)
        if isinstance(report, int):
            return report
        slip = z_slip(report, header=settings.header)
    else:
        found = _find_sale(config, args.tx_id)
        if isinstance(found, int):
            return found
        slip = sale_slip(found, header=settings.header, reprint_at=now)
    return _out(slip, settings.device, settings.paper_mm, args.preview)


def _out(slip: Any, device: str, paper_mm: int, preview: Path | None) -> int:
    from qrpos.peripherals.printer import PrinterSettingError, PrinterTrouble, open_port
    from qrpos.peripherals.render import escpos_bytes, png_bytes
    from qrpos.said import os_reason

    if preview is not None:
        try:
            preview.write_bytes(png_bytes(slip, paper_mm))
        except OSError as exc:
            return fail(t("cli.print.preview_failed", path=str(preview), why=os_reason(exc)))
        print(t("cli.print.previewed", path=str(preview)))
        return EXIT_OK
    try:
        port = open_port(device)
    except PrinterSettingError as exc:
        return fail(exc)
    if port is None:
        return fail(t("cli.print.no_printer"))
    try:
        port.send(escpos_bytes(slip, paper_mm))
    except PrinterTrouble as exc:
        return fail(exc)
    print(t("cli.print.printed", printer=device))
    return EXIT_OK


def _find_sale(config: Config, tx_id: str) -> Any:
    """The sale as the service has it now (its VAT receipt once issued), else as the cache
    last saw it; an exit code when neither has it."""
    from qrpos import spec
    from qrpos.credentials import CredentialsMissing
    from qrpos.ledger import LedgerError
    from qrpos.reports.history_cache import CacheError, HistoryCache
    from qrpos.service import CredentialsRejected, ListingFailed

    cache: HistoryCache | None
    try:
        cache = HistoryCache.in_state_dir(config.state_dir)
    except CacheError:
        cache = None
    try:
        cached = cache.get(tx_id) if cache is not None else None
        try:
            fresh = asyncio.run(_from_service(config, tx_id, cached))
        except ListingFailed as exc:
            if isinstance(exc.outcome, CredentialsRejected):
                return fail(t("cli.print.credentials"), EXIT_CREDENTIALS)
            fresh = None
            if cached is None:
                return fail(t("cli.print.offline", tx=tx_id), EXIT_UNRESOLVED)
            print(t("cli.print.from_cache"))
        except (*SETUP_ERRORS, CredentialsMissing) as exc:
            if cached is None:
                return fail(exc)
            fresh = None
            print(t("cli.print.from_cache"))
        if fresh is not None and cache is not None:
            cache.store([fresh])
        tx = fresh or cached
        if tx is None:
            return fail(t("cli.print.no_such_sale", tx=tx_id))
        if tx.type is not spec.TxType.CHARGE:
            return fail(t("cli.print.not_a_sale", tx=tx_id))
        if fresh is None:
            # the cache is as of its last sync: a refund this kiosk landed since is in the
            # outbox only (`refunded_here`), and the copy must not say "paid" for it
            try:
                tx = _as_refunded_here(config, tx)
            except LedgerError as exc:
                return fail(exc)
        if tx.status is not spec.TxStatus.COMPLETED:
            # a reversed sale's money went back: a "sale" slip would say it was paid (the
            # owner's history screen refuses the copy in the same words)
            return fail(t("history.print_not_charge", tx=tx_id))
        return tx
    finally:
        if cache is not None:
            cache.close()


def _as_refunded_here(config: Config, tx: Any) -> Any:
    """`tx` from the cache as the service has it now: REVERSED when a refund of this
    kiosk's outbox landed on it since the cache's last sync."""
    from qrpos.reports.history import with_refunds_here

    with refunds_landed_here(config) as refunded:
        [now] = with_refunds_here([tx], refunded)
    return now


async def _from_service(config: Config, tx_id: str, cached: Any) -> Any:
    """Look the sale up in the service's history: around its time when it is known, else
    over the last `LOOK_BACK`, newest first."""
    client = client_from_config(config)
    try:
        if cached is not None:
            at = cached.created_at
            window = (at - timedelta(seconds=1), at + timedelta(seconds=1))
        else:
            now = datetime.now(UTC)
            window = (now - LOOK_BACK, now + timedelta(minutes=5))
        async for tx in client.iter_transactions(from_=window[0], to=window[1]):
            if tx.id == tx_id:
                return tx
        return None
    finally:
        await client.aclose()


def _z_report(config: Config, number: int | None) -> Any:
    """The Z numbered `number` (None: the latest) as it was taken; an exit code if none."""
    from qrpos.ledger import Ledger, LedgerError
    from qrpos.ledger.shifts import z_reports

    try:
        ledger = Ledger.open(config.ledger_path)
    except LedgerError as exc:
        return fail(exc)
    try:
        taken = z_reports(ledger)
    finally:
        ledger.close()
    if not taken:
        return fail(t("cli.shift.no_z"))
    wanted = number or taken[-1]["z_number"]
    found = [r for r in taken if r["z_number"] == wanted]
    return found[0] if found else fail(t("cli.shift.no_such_z", number=wanted))


def _queue(config: Config, *, as_json: bool) -> int:
    from qrpos.ledger import Ledger, LedgerError
    from qrpos.ledger.prints import PrintState, recent_slips
    from qrpos.present.format import local_datetime
    from qrpos.present.words import words
    from qrpos.said import Said

    try:
        ledger = Ledger.open(config.ledger_path)
    except LedgerError as exc:
        return fail(exc)
    try:
        jobs = recent_slips(ledger)
    finally:
        ledger.close()
    if as_json:
        print(json.dumps(jobs, ensure_ascii=False))
        return EXIT_OK
    if not jobs:
        print(t("cli.print.queue_empty"))
    for job in jobs:
        when = local_datetime(datetime.fromtimestamp(job["created_at"], UTC))
        kind = t(f"cli.print.kind.{job['kind']}") + (t("cli.print.copy") if job["reprint"] else "")
        state = t(f"cli.print.state.{job['state']}")
        print(f"#{job['id']:<5} {when}  {kind:<18} {state}")
        print(f"       {job['ref']}")
        if job["state"] is not PrintState.PRINTED and job["last_error"]:
            why = words(Said.from_json(job["last_error"]) or str(job["last_error"]))
            print(f"       {t('cli.print.last_error', error=why)}")
    return EXIT_OK
