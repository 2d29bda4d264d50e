"""Mutant of issue 41's first defect (the last round): a refused refund after an abandon
is seen by nobody.

An abandoned sale proven charged (or one a person chose to refund from its review) has
its refund queued; the service refuses it (403). The fix sends the sale to a person, in
review for `refund_refused`, charged, its row offered (`qrpos.ledger.refund_queue.
answer_sale`, as the table's `SALE_REFUND_REFUSED` move says). Before it, the refusal
reached no sale: it stayed "abandoned, charged, refunding" (or "refunded per review")
while the customer's wallet kept the money and nobody was told.

`reintroduce` puts that back: a refund's refusal changes nothing of its sale and opens no
review. A simulator that plays a refund refused after an abandon must then end the day
with a charge kept that is neither a sale nor a person's question.
"""

from __future__ import annotations

import pytest

from qrpos.ledger import refund_queue
from qrpos.ledger.states import IntentChanges, IntentRow, ReversalRow, ReversalState
from qrpos.ledger.typed_rows import Connection

_fixed = refund_queue._answer_changes


def _old_answer_changes(
    conn: Connection, sale: IntentRow, refund: ReversalRow, now: float
) -> IntentChanges:
    """The old answer: a landed refund reaches its sale, a refused one nothing."""
    if refund.state is ReversalState.REFUSED:
        return {}
    return _fixed(conn, sale, refund, now)


def reintroduce(mp: pytest.MonkeyPatch) -> None:
    """Put the defect back where `answer_sale` reads it (every refund's end goes there)."""
    mp.setattr(refund_queue, "_answer_changes", _old_answer_changes)
