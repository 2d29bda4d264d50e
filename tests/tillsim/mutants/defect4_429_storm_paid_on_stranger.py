"""Mutant for issue 47, defect 4: a 429 storm makes a stranger's row "paid".

Brings back the old confirming send: once a history match was found, the key got one
send to speak, owed once more after a 429 (`CONFIRMS_OWED_AGAIN = 1`); after that the
key was not sent again and the match decided. So an open sale whose first sends failed
before committing, with another install's row of its price in its window, met 429 on its
confirming send and its resend, and ended "charged per history" on the stranger's row:
the meal handed over, the customer never charged. The fix keeps the key owed while it may
be sent (`qrpos.ledger.timing.match_rule`, `may_send`).
"""

from __future__ import annotations

import pytest

from qrpos.ledger import lookup
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import IntentRow, IntentState, Moment
from qrpos.ledger.timing import confirm_by_key, match_rule

#: the old code's say of the key on a history match: one confirming send, owed once more
#: after a 429 (`CONFIRMS_OWED_AGAIN = 1`); then the match decided
_OLD_CONFIRMS = 2


def reintroduce(mp: pytest.MonkeyPatch) -> None:
    """Put the old behaviour back where the look-up reads the rule: after two confirming
    sends of a sale the window's match decides (a proof: "charged per history")."""
    said: dict[int, int] = {}

    def spoke(row: IntentRow) -> bool:
        open_ = row.state is not IntentState.ABANDONED and row.if_absent is None
        return open_ and said.get(row.id, 0) >= _OLD_CONFIRMS

    def old_rule(row: IntentRow, policy: RetryPolicy, now: Moment) -> str:
        # "decide": the old rule's word (no longer a `MatchRule`), leave to prove by window
        return "decide" if spoke(row) else match_rule(row, policy, now)

    def old_confirm_by_key(row: IntentRow, policy: RetryPolicy, now: Moment) -> bool:
        if spoke(row):
            return False
        asked = confirm_by_key(row, policy, now)
        if asked:
            said[row.id] = said.get(row.id, 0) + 1
        return asked

    mp.setattr(lookup, "match_rule", old_rule)
    mp.setattr(lookup, "confirm_by_key", old_confirm_by_key)
