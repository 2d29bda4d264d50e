"""Issue 47, defect 3, put back: a shift's X and Z classify "charged" by a list of states
of their own (the old `CHARGED_STATES` with a transaction id), so an abandoned sale proven
charged whose refund stalls or is refused counts "not charged" while the wallet holds the
money, and no later Z ever corrects it (it was never named open). Since review 3 of issue
47 (f0461a1) a window pairing no longer attaches an abandoned sale to a refund made by
hand: the charged abandon whose refund is refused reaches the X/Z as a person's
`refund_refused` review of a sale proven charged (needs_review, charged), and the mutant
puts the same misclassification there.

`reintroduce` patches the shifts' reading of the ledger's one definition
(`qrpos.ledger.shifts.money_of`) back to the old classification; a simulator that plays a
charged abandon through X and Z must then find the Zs no longer equal to the books.
"""

from __future__ import annotations

import pytest

from qrpos.ledger import shifts
from qrpos.ledger.money import Money
from qrpos.ledger.states import CHARGED_STATES, IntentState

_OLD_UNSETTLED = frozenset({IntentState.PENDING, IntentState.UNRESOLVED})


def _old_money(state: IntentState | str, charged: int | bool | None, refunded: bool) -> Money:
    """The old shifts' classification: charged only in a charged state; open only while
    pending, unresolved, an open 401 or a watched abandon; anything else not charged."""
    state = IntentState(state)
    if state in CHARGED_STATES:
        return Money.REFUNDED if refunded else Money.CHARGED
    if state is IntentState.NEEDS_REVIEW and charged:
        # where the charged abandon lands since review 3 (f0461a1): its refund refused, a
        # person's `refund_refused` review of a sale proven charged; the old classification
        # by a list of states of its own counts it as it counted the abandon, not charged
        return Money.NOT_CHARGED
    if state is IntentState.NEEDS_REVIEW or state in _OLD_UNSETTLED:
        return Money.UNKNOWN
    if state is IntentState.CREDENTIALS_REJECTED and charged is None:
        return Money.UNKNOWN
    if state is IntentState.ABANDONED and charged is None:  # (watched)
        return Money.UNKNOWN
    return Money.NOT_CHARGED


def reintroduce(mp: pytest.MonkeyPatch) -> None:
    """Put defect 3 back for the test that `mp` belongs to."""
    mp.setattr(shifts, "money_of", _old_money)
