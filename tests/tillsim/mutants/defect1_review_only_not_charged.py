"""Mutant of issue 47, defect 1: a review can only end "not charged".

Before the fix, `reviews.decide` took `--charged TX` and `--refund TX` only for a row its
review offered. After a re-pairing the kiosk cannot read the old terminal's history, so an
`other_terminal` review offers no rows and both were refused ("rows: none") while the
service showed TX completed: "not charged", false, was the only exit (the same for an
unverified conflict and an unmeasured clock). `reintroduce` puts that refusal back: a
row the review did not offer is refused whatever the person read on the dashboard.

A simulator that settles such a review by naming the charge should see the decision
refused and the sale stay in review (or be closed as not charged) under this mutant.
"""

from __future__ import annotations

import pytest

from qrpos.ledger import reviews, reviews_sql
from qrpos.ledger.typed_rows import Connection
from qrpos.said import say
from qrpos.service import Transaction


def _old_checked_candidate(
    conn: Connection,
    view: reviews.ReviewView,
    decision: reviews.MarkCharged | reviews.RefundRow,
    seen: Transaction | None,
    checkable: bool,
) -> Transaction | None:
    """The old check: only an offered row, and no other sale's."""
    by_id = {c.transaction.id: c.transaction for c in view.candidates}
    if decision.tx_id not in by_id:
        offered = ", ".join(by_id) or "none"
        raise reviews.ReviewRefused(
            say(
                "error.review_not_offered",
                "{tx} is not among the rows of sale #{intent} (rows: {offered})",
                tx=decision.tx_id[:40],
                intent=view.intent.id,
                offered=offered,
            )
        )
    holder = reviews_sql.holder_of(conn, decision.tx_id, besides=int(view.intent.id))
    if holder is not None:
        raise reviews.ReviewRefused(
            say(
                "error.review_owned",
                "{tx} already belongs to sale #{intent}",
                tx=decision.tx_id,
                intent=holder,
            )
        )
    return by_id[decision.tx_id]


def reintroduce(mp: pytest.MonkeyPatch) -> None:
    """Patch the fixed review check back to the old refusal of any row not offered."""
    mp.setattr(reviews, "_checked_candidate", _old_checked_candidate)
