"""What an abandon, and a request found in flight by a process that did not send it, write
to a sale's row.

Part of the ledger's sans-I/O decision core: pure functions of the stored row and the
moment the caller read (wall time, and the boot clock's stamp).
"""

from __future__ import annotations

from qrpos.ledger.events import Move, SaleEvent
from qrpos.ledger.moves import charged_value, sale_move
from qrpos.ledger.states import IntentChanges, IntentRow, IntentState
from qrpos.said import say


def interrupted_changes(now: float, boot: tuple[str | None, float | None]) -> IntentChanges:
    """The columns of a request found in flight by a process that does not own it (the one
    that sent it died, or its task was cancelled): it ended by `now` (on the boot clock
    `boot`), unclear, and late commits are waited for from here. Without these stamps the
    wait fell back to the wall clock of the send: a clock stepped back by hours held the
    sale unsettled for hours (till simulator seed 10798: an abandon of an interrupted sale
    watched all day, its charge owned by nothing)."""
    return {
        "in_flight": 0,
        "maybe_sent": 1,
        "last_end_at": now,
        "last_unclear_end_at": now,
        "unclear_end_boot": boot[0],
        "unclear_end_up": boot[1],
    }


def abandon_changes(
    row: IntentRow, now: float, boot: tuple[str | None, float | None]
) -> tuple[IntentChanges, Move]:
    """The cashier abandons an open sale: never sent again, and the table's move (a request
    that may have reached the service: ABANDON_UNCLEAR, whose `watch` effect the desk
    applies). A request still marked in flight is not the abandoning process's (it holds
    the outbox alone): the one that sent it died, so the request has ended
    (`interrupted_changes`)."""
    unclear = bool(row.maybe_sent or row.in_flight)
    move = sale_move(row.state, SaleEvent.ABANDON_UNCLEAR if unclear else SaleEvent.ABANDON_CLEAN)
    changes: IntentChanges = interrupted_changes(now, boot) if row.in_flight else {}
    changes.update(
        {
            "state": IntentState(move.next),
            "may_resend": 0,
            "token": None,
            "in_flight": 0,
            "maybe_sent": 1 if unclear else 0,
            "charged": charged_value(move, row.charged),
            "resolved_at": None if unclear else now,
            "last_detail": say("sale.abandoned", "abandoned by the cashier"),
        }
    )
    return changes, move
