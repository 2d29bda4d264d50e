"""Mutant for issue 47, defect 2: an abandoned sale refunds a stranger's charge.

Brings back the old rule for abandoned sales: a row the history's window alone pairs with
an abandoned sale (every send failed before anything committed; another install on the
same credentials charged the same amount within its window) proves it charged, and the
kiosk refunds the stranger's charge (it ends REVERSED). The fix sends such a sale to a
person (`unconfirmed_row`) with the row offered (`qrpos.ledger.timing.match_rule`).
"""

from __future__ import annotations

import pytest

from qrpos.ledger import lookup, timing
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import IntentRow, IntentState, Moment

_fixed = timing.match_rule


def _old_rule(row: IntentRow, policy: RetryPolicy, now: Moment) -> str:
    """The old code: an abandoned sale's window pairing decided (proof, then a refund).
    "decide" is the old rule's word, gone from `timing.MatchRule` since a 409 after an
    unclear attempt goes to a person too: the look-up takes any rule but "person" as
    leave to prove by the window, as the old code did."""
    if row.state is IntentState.ABANDONED:
        return "decide"
    return _fixed(row, policy, now)


def reintroduce(mp: pytest.MonkeyPatch) -> None:
    """Put the old behaviour back (the look-up reads the rule through `lookup`)."""
    mp.setattr(lookup, "match_rule", _old_rule)
