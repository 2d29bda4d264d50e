"""`qrpos outbox review`: the sales a person must settle, and settling one headless.

    qrpos outbox review [--json]              list open reviews with their candidate rows
    qrpos outbox review ID --charged TX       this row is the sale: the customer paid
    qrpos outbox review ID --refund TX        this row was charged wrongly: refund it
    qrpos outbox review ID --not-charged      nothing was charged for this sale
    qrpos outbox review --clear-foreign       clear the other-install warning

Gating is the same as `qrpos reverse`: whoever can read the terminal's stored
credentials (the qrpos service user, or root) may settle; the kiosk's owner screen asks
for the manager PIN instead. Every decision is written to the audit trail with the
local user's name.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import textwrap
from typing import Any

from qrpos import spec
from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_CREDENTIALS,
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNRESOLVED,
    EXIT_USAGE,
    SETUP_ERRORS,
    config_from_args,
    fail,
    wrapped,
)
from qrpos.ledger import (
    ChargeRefusedLocally,
    ForeignActivity,
    Ledger,
    LedgerError,
    MarkCharged,
    MarkNotCharged,
    RefundRow,
    ReviewDecision,
    ReviewRefused,
    ReviewView,
    UnknownIntent,
    recorded_foreign_activity,
    review_views,
)
from qrpos.present.format import format_mnt
from qrpos.present.i18n import t
from qrpos.present.owner import result_text, review_reason

REFUND_EXIT = {
    "refunded": EXIT_OK,
    "unresolved": EXIT_UNRESOLVED,
    "credentials_rejected": EXIT_CREDENTIALS,
    "refused": EXIT_REFUSED,
}


def register(actions: Any) -> None:
    """Add `review` under `qrpos outbox`."""
    rv: argparse.ArgumentParser = actions.add_parser(
        "review",
        help=t("help.review.summary"),
        description=textwrap.fill(t("help.review.about"), width=79),  # raw: wrapped here
        epilog=t("help.review.epilog"),
        # argparse cannot wrap a group of choices: the usage is written out to fit 80
        usage=(
            "%(prog)s [-h] [--json] [--deadline S] [id]\n"
            "    [--charged TX | --refund TX | --not-charged | --clear-foreign]"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rv.add_argument("id", nargs="?", type=int, help=t("help.review.id"))
    what = rv.add_mutually_exclusive_group()
    what.add_argument("--charged", metavar="TX", help=t("help.review.charged"))
    what.add_argument("--refund", metavar="TX", help=t("help.review.refund"))
    what.add_argument("--not-charged", action="store_true", help=t("help.review.not_charged"))
    what.add_argument(
        "--clear-foreign",
        action="store_true",
        help=t("help.review.clear_foreign"),
    )
    rv.add_argument("--json", action="store_true", help=t("help.review.json"))
    rv.add_argument(
        "--deadline", metavar="S", type=usage.seconds, default=30.0, help=t("help.review.deadline")
    )
    rv.set_defaults(func=run_review)


def _local(moment: Any) -> str:
    return str((moment + spec.LOCAL_UTC_OFFSET).strftime("%Y-%m-%d %H:%M:%S"))


def _to_json(view: ReviewView) -> dict[str, Any]:
    return {
        "id": int(view.intent.id),
        "amountMNT": view.intent.amount_mnt,
        "token": view.intent.token,
        "reason": view.reason,
        # where its money stands now (the ledger's one definition): "refunded" once a
        # refund of its own row landed, whatever the review still asks
        "money": view.intent.money,
        "createdAt": view.intent.to_json()["createdAt"],
        "candidates": [
            {
                "transactionID": c.transaction.id,
                "amountMNT": c.transaction.amount_mnt,
                "status": c.transaction.status.value,
                "createdAt": c.transaction.to_json().get("createdAt"),
                "otherSales": list(c.other_intents),
            }
            for c in view.candidates
        ],
    }


def _print_views(views: list[ReviewView], foreign: ForeignActivity | None) -> None:
    """The sales waiting for a person, each with its candidate rows, folded to the
    console's width (a Pi's has 80 columns)."""
    if foreign is not None:
        examples = ", ".join(foreign.tx_ids)
        since = _local(foreign.first_seen)
        print(wrapped(t("cli.review.foreign", count=foreign.count, since=since, examples=examples)))
    if not views:
        print(t("review.empty"))
    for view in views:
        amount = format_mnt(view.intent.amount_mnt or 0)
        token, when = view.intent.token or "-", _local(view.intent.created_at)
        print(t("cli.review.sale", id=view.intent.id, amount=amount, token=token, time=when))
        print(wrapped(t("cli.review.reason", reason=review_reason(view.reason)), indent="    "))
        for c in view.candidates:
            tx = c.transaction
            others = ", ".join(f"#{i}" for i in c.other_intents) or t("cli.review.no_others")
            status = t(f"status.{tx.status.value}")
            print(f"    {tx.id}  {format_mnt(tx.amount_mnt)}  {status:<12} {_local(tx.created_at)}")
            print(wrapped(t("cli.review.others", others=others), indent="        "))
        if not view.candidates:
            print(wrapped(t("cli.review.no_candidate"), indent="    "))


def _list(args: argparse.Namespace) -> int:
    ledger = Ledger.open(config_from_args(args).ledger_path)
    try:
        views, foreign = review_views(ledger), recorded_foreign_activity(ledger)
    finally:
        ledger.close()
    if args.json:
        print(json.dumps([_to_json(v) for v in views], ensure_ascii=False, indent=2))
    else:
        _print_views(views, foreign)
    return EXIT_UNRESOLVED if views else EXIT_OK


def _decision(args: argparse.Namespace) -> ReviewDecision | None:
    if args.charged:
        return MarkCharged(args.charged)
    if args.refund:
        return RefundRow(args.refund)
    if args.not_charged:
        return MarkNotCharged()
    return None


async def _settle(args: argparse.Namespace, decision: ReviewDecision) -> int:
    from qrpos.cli.desk import open_desk, print_sale

    actor = f"cli:{getpass.getuser()}"
    async with open_desk(args) as desk:
        result = await desk.settle_review(args.id, decision, actor=actor, deadline_s=args.deadline)
        refund = desk.listing.refund_of(decision.tx_id) if isinstance(decision, RefundRow) else None
    print_sale(result)
    if refund is None:
        return EXIT_OK
    print(result_text(refund)[0])
    return REFUND_EXIT.get(refund.state, EXIT_UNRESOLVED)


async def _clear(args: argparse.Namespace) -> int:
    from qrpos.cli.desk import open_desk

    async with open_desk(args) as desk:
        desk.clear_foreign_activity()
    print(t("review.cleared"))
    return EXIT_OK


def run_review(args: argparse.Namespace) -> int:
    """List open reviews, settle one, or clear the other-install warning."""
    decision = _decision(args)
    try:
        if args.clear_foreign:
            return asyncio.run(_clear(args))
        if decision is None:
            if args.id is not None:
                return fail(t("cli.review.say_how"), EXIT_USAGE)
            return _list(args)
        if args.id is None:
            return fail(t("cli.review.which"), EXIT_USAGE)
        return asyncio.run(_settle(args, decision))
    except ReviewRefused as exc:
        return fail(exc, EXIT_REFUSED)
    except (*SETUP_ERRORS, LedgerError, ChargeRefusedLocally, UnknownIntent) as exc:
        return fail(exc, EXIT_LOCAL_ERROR)
