"""`qrpos reverse TXID`: refund a charge in full through the durable queue.

Exit codes: 0 refunded (204, or 409 already reversed), 2 refused (400/403/404 with the
service's reason), 3 unresolved (kept; `qrpos outbox resolve` retries it), 4
credentials rejected, 1 local error, 64 a usage error (a malformed transaction id).
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
    fail,
)
from qrpos.cli.desk import DEFAULT_DEADLINE_S, open_desk
from qrpos.ledger import ChargeRefusedLocally, LedgerError, ReversalResult

_CODES = {
    "refunded": EXIT_OK,
    "refused": EXIT_REFUSED,
    "unresolved": EXIT_UNRESOLVED,
    "credentials_rejected": EXIT_CREDENTIALS,
}


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "reverse",
        help="refund a charge in full (safe to repeat)",
        description="Reverse a charge by its transaction id; 204 and 409 both mean refunded.",
    )
    p.add_argument("txid", type=usage.tx_id, help="the transaction id (tx_…)")
    p.add_argument(
        "--deadline", type=usage.seconds, default=DEFAULT_DEADLINE_S, help="seconds to keep trying"
    )
    p.set_defaults(func=run)


async def _reverse(args: argparse.Namespace) -> ReversalResult:
    async with open_desk(args) as desk:
        return await desk.reverse(args.txid, deadline_s=args.deadline)


def run(args: argparse.Namespace) -> int:
    """Reverse once through the queue."""
    try:
        result = asyncio.run(_reverse(args))
    except (*SETUP_ERRORS, LedgerError, ChargeRefusedLocally) as exc:
        return fail(str(exc), EXIT_LOCAL_ERROR)
    # the state once; the service's words only where they add to it
    said = f" ({result.message})" if result.message and result.message != result.state else ""
    print(f"{result.tx_id}: {result.state}{said}")
    return _CODES[result.state]
