"""`qrpos reverse TXID`: refund a charge in full through the durable queue.

When the kiosk has a manager PIN (set at pairing), the command asks for it as the
refund screen does, with the same pause after wrong PINs: typed at a terminal, or the
first line of stdin with ``--pin-stdin``.

Exit codes: 0 refunded (204, or 409 already reversed), 2 refused (400/403/404 with the
service's reason), 3 unresolved (kept; `qrpos outbox resolve` retries it), 4
credentials rejected, 1 local error or the manager PIN refused, 64 a usage error (a
malformed transaction id).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_CREDENTIALS,
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNRESOLVED,
    SETUP_ERRORS,
    config_from_args,
    fail,
)
from qrpos.cli.desk import DEFAULT_DEADLINE_S, open_desk
from qrpos.ledger import ChargeRefusedLocally, LedgerError, ReversalResult
from qrpos.present.i18n import t
from qrpos.present.owner import result_text

_CODES = {
    "refunded": EXIT_OK,
    "refused": EXIT_REFUSED,
    "unresolved": EXIT_UNRESOLVED,
    "credentials_rejected": EXIT_CREDENTIALS,
}


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "reverse",
        help=t("help.reverse.summary"),
        description=t("help.reverse.about"),
    )
    p.add_argument("txid", type=usage.tx_id, help=t("help.reverse.txid"))
    p.add_argument(
        "--deadline",
        type=usage.seconds,
        default=DEFAULT_DEADLINE_S,
        help=t("help.reverse.deadline"),
    )
    p.add_argument(
        "--pin-stdin",
        action="store_true",
        help=t("help.reverse.pin_stdin"),
    )
    p.set_defaults(func=run)


def _pin_refusal(args: argparse.Namespace) -> str | None:
    """Why the manager PIN does not allow this refund, or None when it does (or the kiosk
    has none): the refund screen's check, its pause and its words."""
    import getpass
    import sys

    from qrpos import manager_pin
    from qrpos.present.owner import pin_refusal
    from qrpos.reports.pin_gate import PinGate

    config = config_from_args(args)
    if not manager_pin.has_pin(config.state_dir):
        return None
    if args.pin_stdin:
        pin = usage.read_stdin_line()
    elif sys.stdin.isatty():
        pin = getpass.getpass(f"{t('reverse.pin_prompt')}: ")
    else:
        return t("cli.reverse.pin_stdin")
    if not pin:
        return t("reverse.pin_empty")
    return pin_refusal(PinGate(config.state_dir).check(pin.strip()))


async def _reverse(args: argparse.Namespace) -> ReversalResult:
    async with open_desk(args) as desk:
        return await desk.reverse(args.txid, deadline_s=args.deadline)


def run(args: argparse.Namespace) -> int:
    """Reverse once through the queue, behind the manager PIN when the kiosk has one."""
    try:
        refusal = _pin_refusal(args)
        if refusal is not None:
            return fail(refusal, EXIT_LOCAL_ERROR)
        result = asyncio.run(_reverse(args))
    except (*SETUP_ERRORS, LedgerError, ChargeRefusedLocally) as exc:
        return fail(exc, EXIT_LOCAL_ERROR)
    # the owner's refund screen's words
    print(result_text(result)[0])
    return _CODES[result.state]
