"""`qrpos charge --amount N --token T [--deadline S]`: one charge through the outbox.

Prints the Transaction as JSON on stdout when charged and kept. Exit codes: 0 approved
(or found charged in the history), 2 declined or refused, 3 unresolved (kept for
`qrpos outbox resolve`) or for the owner to check, 4 credentials rejected, 1 local
error. Running it again with
the same token and amount while that sale is unresolved resumes the same sale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any, Final

from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_CREDENTIALS,
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNRESOLVED,
    SETUP_ERRORS,
    fail,
)
from qrpos.cli.desk import DEFAULT_DEADLINE_S, ProgressLines, open_desk, print_sale
from qrpos.ledger import (
    AmountOutOfRange,
    ChargeRefusedLocally,
    IntentState,
    LedgerError,
    Money,
    SaleResult,
    UnresolvedChargeExists,
)
from qrpos.present.i18n import t


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "charge",
        help=t("help.charge.summary"),
        description=(t("help.charge.about")),
    )
    p.add_argument("--amount", type=usage.amount_mnt, required=True, help=t("help.charge.amount"))
    token = p.add_mutually_exclusive_group(required=True)
    token.add_argument("--token", type=usage.qr_token, help=t("help.charge.token"))
    token.add_argument("--token-stdin", action="store_true", help=t("help.charge.token_stdin"))
    p.add_argument(
        "--deadline",
        type=usage.seconds,
        default=DEFAULT_DEADLINE_S,
        help=t("help.charge.deadline"),
    )
    p.set_defaults(func=run)


#: where a sale's money stands when the customer did not pay (exit 2)
_NOT_PAID: Final = frozenset({Money.NOT_CHARGED, Money.REFUNDED})


def exit_code(result: SaleResult) -> int:
    """The exit code for a sale's state (docs/architecture.md), read from the ledger's one
    definition of its money (`is_sold`, `money_of`), as the till's result screen reads it:
    0 only for a sale charged and kept. A sale charged whose fate a person or a refund
    still decides (a `reversed_row` review proven on a row being refunded by hand) is
    open, 3; not charged, or charged and its refund landed by the state's very name, is
    not paid, 2."""
    if result.sold:
        return EXIT_OK
    if result.state is IntentState.CREDENTIALS_REJECTED:
        return EXIT_CREDENTIALS
    if result.money in _NOT_PAID:
        return EXIT_REFUSED
    return EXIT_UNRESOLVED


async def _charge(args: argparse.Namespace, token: str) -> int:
    from qrpos.ledger.shifts import shift_needed

    progress = ProgressLines()
    async with open_desk(args) as desk:
        if shift_needed(desk.ledger):  # the till keeps shifts: as the kiosk refuses it
            return fail(t("cli.shift.none_open"), EXIT_LOCAL_ERROR)
        try:
            result = await desk.charge(
                args.amount, token, deadline_s=args.deadline, on_progress=progress
            )
        except UnresolvedChargeExists:
            # settle what an earlier run left, then take this sale if nothing blocks it
            for earlier in await desk.recover(progress, deadline_s=args.deadline):
                with_stdout_to_stderr(earlier)
            result = await desk.charge(
                args.amount, token, deadline_s=args.deadline, on_progress=progress
            )
    if result.transaction is not None and result.sold:
        print(json.dumps(result.transaction.to_json(), ensure_ascii=False))
    with_stdout_to_stderr(result)
    return exit_code(result)


def with_stdout_to_stderr(result: SaleResult) -> None:
    """The human line about the sale goes to stderr; stdout carries only the JSON."""
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        print_sale(result)
    finally:
        sys.stdout = saved


def run(args: argparse.Namespace) -> int:
    """Charge once through the outbox."""
    token = usage.qr_token(usage.read_stdin_line()) if args.token_stdin else args.token
    try:
        return asyncio.run(_charge(args, token))
    except AmountOutOfRange as exc:
        return fail(exc, EXIT_REFUSED)
    except (*SETUP_ERRORS, LedgerError, ChargeRefusedLocally) as exc:
        return fail(exc, EXIT_LOCAL_ERROR)
