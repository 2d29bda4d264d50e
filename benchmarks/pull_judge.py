"""The verdict on one sale after a plug pull (benchmarks/image_pulls.py): the service's
books against the card's ledger. Pure: tests/installer/test_pull_judge.py loads it by
its path.

A sale is resolved when the ledger holds one sale for the pass and its money is known,
and the two sides agree: charged once in the books and charged in the ledger, or charged
in neither. A pull before the sale was stored leaves no sale at all, which is resolved
only if the books show no charge either. A sale in review (`needs_review`: the kiosk
claims nothing, a person decides) is not resolved by the kiosk but is not wrong. Never
right: the books charged twice; the books charged and the ledger says not charged (the
cashier was told a lie) or holds nothing; the ledger says charged and the books do not;
the sale still open (pending, unresolved).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qrpos.ledger.money import Money, money_of


@dataclass(frozen=True)
class Verdict:
    outcome: str  # "charged", "not charged", "not stored" or what went wrong
    ok: bool
    double: bool = False


def judge(charges: int, refunds: int, intents: Sequence[tuple[str, int | None]]) -> Verdict:
    """`charges`: the wallet's CHARGE transactions in the books; `refunds`: how many of
    them were reversed; `intents`: (state, charged) of each ledger sale for the pass."""
    if charges > 1:
        return Verdict(f"charged {charges} times", ok=False, double=True)
    if len(intents) > 1:
        return Verdict(f"{len(intents)} sales in the ledger for one pass", ok=False)
    if not intents:
        if charges:
            return Verdict("charged, and no sale in the ledger", ok=False)
        return Verdict("not stored", ok=True)
    state, charged = intents[0]
    # the ledger's word alone (a refund of its row in its own tables is not read here)
    money = money_of(state, charged, refunded=False)
    if state == "needs_review":
        # the kiosk claims nothing: a person decides (the sale's key may no longer be
        # sent after a reboot, docs/ledger.md "person"); the books must not hold two
        return Verdict(f"in review, the books {'charged' if charges else 'not charged'}", ok=True)
    if money is Money.UNKNOWN:
        return Verdict(f"unresolved ({state})", ok=False)
    if money is Money.NOT_CHARGED:
        if charges:
            return Verdict(f"the ledger says not charged ({state}), the books charged", ok=False)
        return Verdict("not charged", ok=True)
    if not charges:
        return Verdict(f"the ledger says charged ({state}), the books did not", ok=False)
    if money is Money.REFUNDED:
        return Verdict("charged, refunded", ok=refunds == 1)
    if refunds:
        return Verdict(f"the books refunded, the ledger says charged ({state})", ok=False)
    return Verdict("charged", ok=True)
