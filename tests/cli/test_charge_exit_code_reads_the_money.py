"""`qrpos charge`'s exit code reads the ledger's one definition of a sale's money, as the
till's result screen does (issue 47: "the owner's screens and the TUI read 'charged' from
the ledger's one definition").

Found in review 7's leads: `exit_code` returned 0 ("approved") for any sale whose
`charged` column said yes, so a sale proven on a row the owner is refunding by hand
(`lookup_proven_refunded_row`: a `reversed_row` review, charged) exited 0 while the till's
screen said "a person must decide": a script selling through `qrpos charge` would hand
over the goods for money that is going back. Every cell of the state table is checked
(each state with charged yes, no and unknown), not only the one found.
"""

from __future__ import annotations

import itertools

import pytest

from qrpos.cli.charge import exit_code
from qrpos.cli.common import EXIT_CREDENTIALS, EXIT_OK, EXIT_REFUSED, EXIT_UNRESOLVED
from qrpos.ledger import IntentState, Money, SaleResult, is_sold, money_of
from qrpos.present.i18n import set_language
from qrpos.present.outcome import outcome_view

#: each state with charged yes, no, unknown; and with a refund of its row landed or not
CELLS = list(itertools.product(IntentState, (True, False, None), (False, True)))


def _result(state: IntentState, charged: bool | None, refunded: bool = False) -> SaleResult:
    return SaleResult(7, state, 4500, None, None, None, charged, refunded=refunded)


@pytest.mark.parametrize(
    ("state", "charged", "refunded"), CELLS, ids=[f"{s.value}-{c}-{r}" for s, c, r in CELLS]
)
def test_exit_code_agrees_with_the_till_screen(
    state: IntentState, charged: bool | None, refunded: bool
) -> None:
    set_language("en")
    result = _result(state, charged, refunded)
    code = exit_code(result)
    money = money_of(state, charged, refunded)
    assert result.money is money
    # 0 exactly when the till's screen says "approved": charged and kept
    assert (code == EXIT_OK) == (outcome_view(result).kind == "approved"), (code, money)
    assert (code == EXIT_OK) == is_sold(state, charged, refunded) == result.sold
    # never "declined or refused" while the customer may have paid
    if money in (Money.CHARGED, Money.UNKNOWN):
        assert code != EXIT_REFUSED, (code, money)
    # the money went back: the screen says so, never "not settled" nor "approved"
    view = outcome_view(result)
    if money is Money.REFUNDED:
        assert (view.kind, view.headline) != ("warning", "?"), view
    # a sale charged but not kept (in review, its refund queued) is open, never "approved"
    if money is Money.CHARGED and not result.sold:
        assert code in (EXIT_UNRESOLVED, EXIT_CREDENTIALS), code


def test_the_case_found_a_reversed_row_review_proven_charged_is_open() -> None:
    """The case itself: in review on its own row, which a refund by hand is taking back."""
    assert exit_code(_result(IntentState.NEEDS_REVIEW, True)) == EXIT_UNRESOLVED
    assert exit_code(_result(IntentState.APPROVED, True)) == EXIT_OK
    assert exit_code(_result(IntentState.DECLINED, False)) == EXIT_REFUSED
    assert exit_code(_result(IntentState.REVERSED_AFTER_ABANDON, True)) == EXIT_REFUSED
    # approved, then its row refunded by hand: the money went back, never "approved"
    assert exit_code(_result(IntentState.APPROVED, True, refunded=True)) == EXIT_REFUSED
    set_language("en")
    refunded = outcome_view(_result(IntentState.APPROVED, True, refunded=True))
    assert (refunded.kind, refunded.headline) == ("warning", "REFUNDED"), refunded
