"""Where a sale's money stands: the ledger's one definition (issue 47).

Part of the decision core (no SQLite, no clock): `money_of` sorts a sale into charged,
refunded, not charged or unknown from its `charged` column and its state; `is_sold` (charged
and kept) and `is_held` (charged, its fate open: a refund queued, stalled or refused, or a
review) sit on it. Shift reports, the owner's screens, the till's result screen and the
metrics read these, never a list of states of their own (tests/ledger/test_money.py), and
`money_sql` writes the same rule as SQL for the storage module that counts Zs.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from qrpos.ledger.states import CHARGED_STATES, SOLD_STATES, IntentState


def _sql_list(states: frozenset[IntentState]) -> str:
    return ", ".join(f"'{s.value}'" for s in sorted(states))


class Money(StrEnum):
    """Where a sale's money stands: the one definition every report and screen reads
    (`money_of`; in SQL, `MONEY_SQL`). Stored in a Z's lines (`z_line.money`)."""

    #: the customer was charged and the money is with the merchant: kept, or its refund
    #: has not landed (queued, stalled, refused, or a person's review of it)
    CHARGED = "charged"
    #: charged, and a refund the service confirmed (204, or 409 "already reversed") gave
    #: it back
    REFUNDED = "refunded"
    #: nothing was charged (a clean answer, proven absence, or a person's decision)
    NOT_CHARGED = "not_charged"
    #: not known yet: named, never guessed
    UNKNOWN = "unknown"


#: states that are "charged" whatever the `charged` column says (a row of an old file)
_CHARGED_BY_STATE: Final = CHARGED_STATES
#: states whose refund has landed by their very name
_REFUNDED_BY_STATE: Final = frozenset({IntentState.REVERSED_AFTER_ABANDON})


def money_of(state: IntentState | str, charged: int | bool | None, refunded: bool) -> Money:
    """Where a sale's money stands, from its `charged` column and its state, and whether
    a confirmed refund of its row exists (`refunded`: a `reversal` of its `tx_id` in
    state `refunded`). A proven charge counts as charged until its refund lands, whatever
    the state: an abandoned sale proven charged whose refund stalls or is refused holds
    the customer's money. The one definition of charged / refunded / not charged /
    unknown (`MONEY_SQL` is its twin, held equal by tests/ledger/test_money.py)."""
    state = IntentState(state)
    if charged == 1 or state in _CHARGED_BY_STATE:
        if refunded or state in _REFUNDED_BY_STATE:
            return Money.REFUNDED
        return Money.CHARGED
    if charged == 0:
        return Money.NOT_CHARGED
    return Money.UNKNOWN


def is_sold(state: IntentState | str, charged: int | bool | None, refunded: bool) -> bool:
    """Charged and kept: the customer paid, and no refund is landed, queued by the
    kiosk's own decision or in question (`SOLD_STATES` among the charged). What the
    till's sales, a receipt and the cashier's "paid" screen count."""
    return money_of(state, charged, refunded) is Money.CHARGED and IntentState(state) in SOLD_STATES


def is_held(state: IntentState | str, charged: int | bool | None, refunded: bool) -> bool:
    """Charged, with the money still with the merchant while its fate is open: a refund
    queued, stalled or refused, or a person's review (an abandoned sale proven charged,
    `refunded_per_review` before its refund lands, a `refund_refused` review)."""
    return (
        money_of(state, charged, refunded) is Money.CHARGED
        and IntentState(state) not in SOLD_STATES
    )


def money_sql(refunded: str) -> str:
    """`money_of` as a SQL expression on `charge_intent`, given `refunded`: a condition
    true when a confirmed refund of the sale's row exists (the storage module that runs it
    writes that condition: `shifts_sql.MONEY_SQL`). The states are our own constants."""
    charged = f"(charged = 1 OR state IN ({_sql_list(_CHARGED_BY_STATE)}))"
    landed = f"({refunded} OR state IN ({_sql_list(_REFUNDED_BY_STATE)}))"
    return (
        f"(CASE WHEN {charged} THEN (CASE WHEN {landed} THEN '{Money.REFUNDED.value}'"
        f" ELSE '{Money.CHARGED.value}' END)"
        f" WHEN charged = 0 THEN '{Money.NOT_CHARGED.value}'"
        f" ELSE '{Money.UNKNOWN.value}' END)"
    )
