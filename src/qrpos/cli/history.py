"""`qrpos history`: this terminal's transactions, newest first, in local time (UTC+8).

Read from the service and saved to the local cache; when the service cannot be reached
the last known history is printed from the cache, marked offline (exit 3).
Exit codes: 0 done, 3 offline (cached rows shown), 4 credentials rejected, 1 local error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Any

from qrpos import spec
from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_CREDENTIALS,
    EXIT_OK,
    EXIT_UNRESOLVED,
    EXIT_USAGE,
    SETUP_ERRORS,
    WIDE_COLUMNS,
    client_from_config,
    config_from_args,
    console_width,
    fail,
    refunds_landed_here,
)
from qrpos.config import Config
from qrpos.ledger import LedgerError
from qrpos.present.format import format_mnt
from qrpos.present.i18n import t
from qrpos.present.words import words
from qrpos.reports.history import HistoryFeed, HistoryPage, RefundedHere
from qrpos.reports.history_cache import CacheError, HistoryCache
from qrpos.reports.localday import day_window, parse_day, to_local
from qrpos.service import Transaction, parse_rfc3339


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "history",
        help=t("help.history.summary"),
        description=t("help.history.about"),
    )
    p.add_argument(
        "--from", dest="from_", metavar="WHEN", type=usage.when, help=t("help.history.from_")
    )
    p.add_argument("--to", metavar="WHEN", type=usage.when, help=t("help.history.to"))
    p.add_argument(
        "--limit",
        type=usage.bounded_int(1, 1_000_000),
        default=50,
        help=t("help.history.limit"),
    )
    p.add_argument("--json", action="store_true", help=t("help.history.json"))
    p.set_defaults(func=run)


def parse_when(text: str, *, end: bool) -> datetime:
    """A local date (start of the day, or the start of the next one for `end`) or an
    RFC 3339 instant (as `usage.when` checked it); ValueError in the configured language
    otherwise."""
    try:
        day = parse_day(text)
    except ValueError:
        try:
            return parse_rfc3339(text)
        except ValueError:
            raise ValueError(t("cli.usage.not_when")) from None
    start, next_start = day_window(day)
    return next_start if end else start


def row_text(tx: Transaction, columns: int = 80) -> str:
    """A row of the table: on one line from WIDE_COLUMNS columns; on a narrower console
    (a Pi's has 80) the id and the VAT receipt number go on a second, indented line."""
    vat = t(f"vat.{tx.vat_status.value}") if tx.vat_status else t("vat.none")
    head = (
        f"{to_local(tx.created_at):%Y-%m-%d %H:%M:%S}  {format_mnt(tx.amount_mnt):>13}  "
        f"{t(f'status.{tx.status.value}'):<12} {vat:<14}"
    )
    if columns >= WIDE_COLUMNS:
        return f"{head} {tx.vat_receipt_id or '—':<33} {tx.id}"
    receipt = t("history.selected", tx=tx.id, receipt=tx.vat_receipt_id or "—")
    return f"{head.rstrip()}\n    {receipt}"


async def _collect(
    config: Config,
    from_: datetime | None,
    to: datetime | None,
    limit: int,
    refunded: RefundedHere | None,
) -> tuple[list[Transaction], HistoryPage]:
    try:
        cache: HistoryCache | None = HistoryCache.in_state_dir(config.state_dir)
    except CacheError:
        cache = None
    client = client_from_config(config)
    async with client:
        feed = HistoryFeed(client, cache, lambda: datetime.now(UTC), refunded)
        rows: list[Transaction] = []
        page = await feed.page(from_utc=from_, to_utc=to, limit=min(limit, spec.LIST_LIMIT_MAX))
        rows.extend(page.transactions)
        while page.next is not None and len(rows) < limit:
            page = await feed.page(
                from_utc=from_, to_utc=to, cursor=page.next, limit=min(limit, spec.LIST_LIMIT_MAX)
            )
            rows.extend(page.transactions)
    if cache is not None:
        cache.close()
    if to is not None:
        rows = [tx for tx in rows if tx.created_at < to]
    return rows[:limit], page


def run(args: argparse.Namespace) -> int:
    if args.limit < 1:
        return fail(t("cli.positive", options="--limit"), EXIT_USAGE)
    try:
        from_ = parse_when(args.from_, end=False) if args.from_ else None
        to = parse_when(args.to, end=True) if args.to else None
    except ValueError as exc:  # not reached from the command line: argparse checked it
        return fail(str(exc), EXIT_USAGE)
    if from_ and to and to < from_:
        return fail(t("cli.history.to_before_from"), EXIT_USAGE)
    try:
        config = config_from_args(args)
        with refunds_landed_here(config) as refunded:
            rows, last = asyncio.run(_collect(config, from_, to, args.limit, refunded))
    except (*SETUP_ERRORS, LedgerError) as exc:  # the outbox, read for refunds landed here
        return fail(exc)
    if args.json:
        print(json.dumps([tx.to_json() for tx in rows], ensure_ascii=False))
    else:
        columns = console_width()
        for tx in rows:
            print(row_text(tx, columns))
        if not rows:
            print(t("history.empty"))
    if last.offline:
        when = to_local(last.synced_at).strftime("%Y-%m-%d %H:%M") if last.synced_at else None
        reason = words(last.reason)
        note = (
            t("history.offline", when=when, reason=reason)
            if when
            else t("history.offline_never", reason=reason)
        )
        print(note, file=sys.stderr)
        if last.credentials_rejected:
            return fail(t("history.credentials"), EXIT_CREDENTIALS)
        return EXIT_UNRESOLVED
    return EXIT_OK
