"""`admission.refund_admission`: one refund per row, for a sale and for an owner's `qrpos
reverse` alike (issue 47: it was written twice, in `reversals.refund_for_sale` and in the
desk's reverse queue). Every state a row's latest refund can be in, by whose it is."""

from __future__ import annotations

import pytest

from qrpos.ledger.admission import Admission, refund_admission
from qrpos.ledger.states import ReversalState

LIVE = [s for s in ReversalState if s is not ReversalState.REFUSED]


@pytest.mark.parametrize("sale", [None, 7])
def test_a_row_no_refund_moved_money_on_gets_a_new_refund(sale: int | None) -> None:
    assert refund_admission(None, None, sale) is Admission.QUEUE
    for holder in (None, 7, 8):
        assert refund_admission(ReversalState.REFUSED, holder, sale) is Admission.QUEUE


@pytest.mark.parametrize("state", LIVE)
def test_a_live_refund_is_the_rows_one(state: ReversalState) -> None:
    # by hand: the row's live refund, whoever's it is
    for holder in (None, 7):
        assert refund_admission(state, holder, None) is Admission.SAME
    # for a sale: its own is the one; one made by hand becomes its; another sale's is not
    assert refund_admission(state, 7, 7) is Admission.SAME
    assert refund_admission(state, None, 7) is Admission.TAKE_OVER
    assert refund_admission(state, 8, 7) is Admission.OTHER_SALE


def test_every_answer_is_reachable() -> None:
    states: list[ReversalState | None] = [None, *ReversalState]
    seen = {
        refund_admission(state, holder, sale)
        for state in states
        for holder in (None, 7, 8)
        for sale in (None, 7)
    }
    assert seen == set(Admission)
