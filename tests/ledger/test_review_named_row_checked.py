"""A row a person names for a review (issue 47) that the kiosk can read, in the history of
the terminal the sale went out under, is checked: it must be there, a charge, of the
sale's amount, and no other sale's. In-process sandbox (ASGI); the loopback-HTTP story of a
re-paired kiosk is `test_review_named_row.py`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from test_reviews import contested_pair, review_desk  # noqa: F401  (a fixture)

from qrpos import spec
from qrpos.ledger import ChargeDesk, MarkCharged, RefundRow, ReviewRefused
from qrpos.ledger.states import IntentState
from qrpos.simulator import Sandbox, TerminalCredentials


async def test_a_named_row_of_this_terminal_is_checked_before_it_is_taken(
    review_desk: ChargeDesk,  # noqa: F811
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> None:
    a, b, tx, _ = await contested_pair(review_desk, sandbox)
    now = datetime.now(UTC)
    other_price = sandbox.seed_charge(terminal.username, 900, now)
    too_old = sandbox.seed_charge(terminal.username, 700, now - timedelta(days=3))
    elsewhere = sandbox.seed_charge(sandbox.create_terminal("m_demo").username, 700, now)
    right = sandbox.seed_charge(terminal.username, 700, now)
    before = review_desk.listing.reviews()
    for named, why in (
        (other_price, "is of"),
        (too_old, "not in this terminal's history"),
        (elsewhere, "not in this terminal's history"),
        ("tx_", "not a transaction id"),
    ):
        for decision in (MarkCharged(named), RefundRow(named)):
            with pytest.raises(ReviewRefused, match=why):
                await review_desk.settle_review(a, decision)
    assert review_desk.listing.reviews() == before
    done = await review_desk.settle_review(a, MarkCharged(right))
    assert done.state is IntentState.CHARGED_PER_REVIEW
    assert done.transaction is not None and done.transaction.id == right  # read, kept
    with pytest.raises(ReviewRefused, match="belongs to sale"):
        await review_desk.settle_review(b, RefundRow(right))
    # the offered row is still B's to decide
    assert (await review_desk.settle_review(b, MarkCharged(tx))).transaction is not None
    assert all(t.status is spec.TxStatus.COMPLETED for t in sandbox.transactions())
