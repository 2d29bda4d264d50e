"""`qrpos outbox`: see and settle the sales and refunds the outbox still holds.

    qrpos outbox [list [--all] [--json]]   what needs attention (or everything)
    qrpos outbox resolve [ID] [--deadline S]  work on them; 0 nothing left, 3 some left
    qrpos outbox abandon ID                never send that sale again (history still watched)
    qrpos outbox show ID [--json]          one sale (12) or refund (r3) and its audit trail
    qrpos outbox review [ID --charged TX | --refund TX | --not-charged]
                                           sales a person must settle (see `review --help`)

`--json` prints an array of {"id","kind","amountMNT","state","charged","transactionID",
"token","createdAt"}; `token` is the last four characters only. `show --json` prints
{"item": that object, "attempts": [{"kind","n","sentAt","status","outcome",
"elapsedSeconds","detail"}]}, oldest first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from qrpos import spec
from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_UNRESOLVED,
    SETUP_ERRORS,
    config_from_args,
    fail,
    wrapped,
)
from qrpos.cli.desk import DEFAULT_DEADLINE_S, ProgressLines, open_desk, print_sale
from qrpos.ledger import (
    AttemptView,
    ChargeRefusedLocally,
    IntentView,
    Ledger,
    LedgerError,
    UnknownIntent,
    outbox_audit,
    outbox_views,
)
from qrpos.present.format import format_mnt
from qrpos.present.i18n import t
from qrpos.present.owner import charged_word, money_word, state_word
from qrpos.present.words import words


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "outbox",
        help=t("help.outbox.summary"),
        description=t("help.outbox.about"),
    )
    p.set_defaults(func=run_list, all=False, json=False)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    lst = actions.add_parser("list", help=t("help.outbox.list.summary"))
    lst.add_argument("--all", action="store_true", help=t("help.outbox.list.all"))
    lst.add_argument("--json", action="store_true", help=t("help.outbox.list.json"))
    lst.set_defaults(func=run_list)
    res = actions.add_parser("resolve", help=t("help.outbox.resolve.summary"))
    res.add_argument("id", nargs="?", type=int, help=t("help.outbox.resolve.id"))
    res.add_argument(
        "--deadline",
        type=usage.seconds,
        default=DEFAULT_DEADLINE_S,
        help=t("help.outbox.resolve.deadline"),
    )
    res.set_defaults(func=run_resolve)
    ab = actions.add_parser("abandon", help=t("help.outbox.abandon.summary"))
    ab.add_argument("id", type=int, help=t("help.outbox.abandon.id"))
    ab.set_defaults(func=run_abandon)
    show = actions.add_parser("show", help=t("help.outbox.show.summary"))
    show.add_argument("item", metavar="ID", help=t("help.outbox.show.id"))
    show.add_argument("--json", action="store_true", help=t("help.outbox.show.json"))
    show.set_defaults(func=run_show)
    from qrpos.cli import review

    review.register(actions)


def _describe(view: IntentView) -> str:
    """A sale or refund in two lines that fit 80 columns: what and where it stands, then
    when, its transaction and the code's last characters; an open one's reason under it."""
    # a sale: where its money stands now (a refund landed says so); a refund: charged or
    # not, nothing for one the service refused (its state says so, its reason under it)
    charged = money_word(view.money) if view.money else charged_word(view.charged)
    if view.kind == "reversal" and view.state == "refused":
        charged = ""
    amount = "-" if view.amount_mnt is None else format_mnt(view.amount_mnt)
    local = (view.created_at + spec.LOCAL_UTC_OFFSET).strftime("%Y-%m-%d %H:%M:%S")
    kind, state = t(f"cli.kind.{view.kind}"), state_word(view.state)
    lines = [
        f"{view.id:>6}  {kind:<10} {amount:>11}  {state:<22} {charged}".rstrip(),
        f"        {local}  {view.transaction_id or '-'}  {view.token or ''}".rstrip(),
    ]
    # an open one's last try; a refund the service refused, why (the customer is charged)
    if view.detail and (view.charged is None or view.state == "refused"):
        said = words(view.detail_said or view.detail)
        lines.append(wrapped(t("cli.outbox.last_try", detail=said), indent="        "))
    return "\n".join(lines)


def _describe_attempt(attempt: AttemptView) -> str:
    """One line of the audit trail (local time, what, the reply), its note wrapped under."""
    local = (attempt.sent_at + spec.LOCAL_UTC_OFFSET).strftime("%Y-%m-%d %H:%M:%S")
    status = "-" if attempt.status is None else str(attempt.status)
    took = "" if attempt.elapsed_s is None else f"  {attempt.elapsed_s:.2f} s"
    line = f"    {local}  {attempt.kind} #{attempt.n:<3} {status:>4}  {attempt.outcome}{took}"
    if attempt.detail:
        line += "\n" + wrapped(attempt.detail, indent="        ")
    return line


def _read_views(args: argparse.Namespace) -> list[IntentView]:
    # listing needs no client (and no password): read the outbox directly
    ledger = Ledger.open(config_from_args(args).ledger_path)
    try:
        return outbox_views(ledger, include_final=args.all)
    finally:
        ledger.close()


def run_list(args: argparse.Namespace) -> int:
    """Print the outbox rows (as JSON with --json)."""
    try:
        views = _read_views(args)
    except (*SETUP_ERRORS, LedgerError) as exc:
        return fail(exc)
    if args.json:
        print(json.dumps([v.to_json() for v in views], ensure_ascii=False, indent=2))
    elif not views:
        print(t("cli.outbox.nothing") if not args.all else t("cli.outbox.empty"))
    else:
        for view in views:
            print(_describe(view))
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    """One sale or refund and every attempt and look-up the outbox recorded for it."""
    try:
        ledger = Ledger.open(config_from_args(args).ledger_path)
        try:
            view, attempts = outbox_audit(ledger, args.item)
        finally:
            ledger.close()
    except (*SETUP_ERRORS, LedgerError, UnknownIntent) as exc:
        return fail(exc)
    if args.json:
        document = {"item": view.to_json(), "attempts": [a.to_json() for a in attempts]}
        print(json.dumps(document, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(_describe(view))
    print(t("cli.outbox.attempts") if attempts else t("cli.outbox.no_attempts"))
    for attempt in attempts:
        print(_describe_attempt(attempt))
    return EXIT_OK


async def _resolve(args: argparse.Namespace) -> int:
    progress = ProgressLines()
    async with open_desk(args) as desk:
        if args.id is not None:
            print_sale(await desk.resolve(args.id, deadline_s=args.deadline, on_progress=progress))
        else:
            for result in await desk.recover(progress, deadline_s=args.deadline, patient=True):
                print_sale(result)
        left = desk.listing.unresolved()
    for view in left:
        print(_describe(view))
    if left:
        print(t("cli.outbox.left", count=len(left)))
        return EXIT_UNRESOLVED
    print(t("cli.outbox.none_left"))
    return EXIT_OK


def run_resolve(args: argparse.Namespace) -> int:
    """Work on open sales and refunds until settled or the deadline passes."""
    try:
        return asyncio.run(_resolve(args))
    except (*SETUP_ERRORS, LedgerError, ChargeRefusedLocally, UnknownIntent) as exc:
        return fail(exc)


async def _abandon(args: argparse.Namespace) -> int:
    async with open_desk(args) as desk:
        result = await desk.abandon(args.id)
    print_sale(result)
    return EXIT_OK


def run_abandon(args: argparse.Namespace) -> int:
    """Mark one sale abandoned (never sent again)."""
    try:
        return asyncio.run(_abandon(args))
    except (*SETUP_ERRORS, LedgerError, ChargeRefusedLocally, UnknownIntent) as exc:
        return fail(exc, EXIT_LOCAL_ERROR)
