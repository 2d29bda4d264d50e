"""The reviews and another install's activity as a reader sees them: read-only views of
the outbox, for the listing, the desk and the decisions alike.

A storage-floor module (docs/ledger.md, "The ledger's floors"): `reviews` (a person's
decision) and `listing` (the outbox as a reader sees it) both read here, so neither
imports the other.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime

from msgspec import structs

from qrpos import spec
from qrpos.ledger import reviews_sql, service_sql, shifts_sql
from qrpos.ledger.events import ReviewReason
from qrpos.ledger.failures import DamagedRow
from qrpos.ledger.states import IntentRow
from qrpos.ledger.store import Ledger
from qrpos.ledger.typed_rows import Connection, stored_json
from qrpos.ledger.views import IntentView, intent_view
from qrpos.service import Transaction, parse_transaction
from qrpos.service.models import MalformedResponse

#: how many example transaction ids `ForeignActivity` carries
FOREIGN_EXAMPLES = 5
REVERSED = spec.TxStatus.REVERSED


@dataclass(frozen=True)
class ReviewCandidate:
    """A history row that could be the sale's charge."""

    transaction: Transaction
    #: other intents of this outbox that could own it
    other_intents: tuple[int, ...]


@dataclass(frozen=True)
class ReviewView:
    """A sale waiting for a person, why, and the rows that could be its charge."""

    intent: IntentView
    #: its stable code: a `ReviewReason` (a value a newer ledger stored stays the text)
    reason: str
    candidates: tuple[ReviewCandidate, ...]


@dataclass(frozen=True)
class ForeignActivity:
    """Another install is charging with this terminal's credentials."""

    first_seen: datetime
    #: distinct rows seen that no sale of this outbox sent
    count: int
    #: a few of them, oldest first
    tx_ids: tuple[str, ...]


# --- reviews ----------------------------------------------------------------------------


def _candidates(text: str) -> tuple[ReviewCandidate, ...]:
    try:
        return tuple(
            ReviewCandidate(parse_transaction(item["transaction"]), tuple(item["others"]))
            for item in stored_json(text, "a review's rows")
        )
    except (KeyError, TypeError, MalformedResponse) as exc:
        raise DamagedRow(f"a review's rows cannot be read ({exc})") from None


def sale_review(conn: Connection, row: IntentRow) -> ReviewView:
    """The review of sale `row` (in review) as a person sees it: why, and its rows."""
    found = reviews_sql.review_of(conn, row.id)
    if found is None:  # opened before reviews were recorded: the detail says what was seen
        return ReviewView(intent_view(row), ReviewReason.AMBIGUOUS_HISTORY, ())
    known = found[0] in ReviewReason.__members__.values()
    reason = ReviewReason(found[0]) if known else found[0]
    return ReviewView(intent_view(row), reason, _candidates(found[1]))


def open_reviews(conn: Connection) -> list[ReviewView]:
    """Every sale in needs_review, oldest first, as a person sees it now: a row offered
    that a refund of this outbox gave back since the review opened is REVERSED (as the
    history lists it now), and the sale's money says so when it was its own row. (A
    decision reads `sale_review`, as stored, and weighs the row's refunds itself.)"""
    rows = reviews_sql.in_review(conn)
    views = [sale_review(conn, row) for row in rows]
    offered = [c.transaction.id for v in views for c in v.candidates]
    back = shifts_sql.refunded_tx_ids(conn, offered + [r.tx_id for r in rows if r.tx_id])
    if not back:
        return views
    return [
        dataclasses.replace(
            view,
            intent=intent_view(row, row.tx_id in back),
            candidates=tuple(_as_now(c, back) for c in view.candidates),
        )
        for row, view in zip(rows, views, strict=True)
    ]


def _as_now(candidate: ReviewCandidate, back: set[str]) -> ReviewCandidate:
    tx = candidate.transaction
    if tx.id not in back or not tx.is_charge:
        return candidate
    return dataclasses.replace(candidate, transaction=structs.replace(tx, status=REVERSED))


# --- another install ---------------------------------------------------------------------


def foreign_activity(conn: Connection) -> ForeignActivity | None:
    """The warning while it is not cleared, or None."""
    rows = service_sql.uncleared_foreign(conn)
    if not rows:
        return None
    return ForeignActivity(
        first_seen=datetime.fromtimestamp(rows[0][1], UTC),
        count=len(rows),
        tx_ids=tuple(tx_id for tx_id, _ in rows[:FOREIGN_EXAMPLES]),
    )


def review_views(ledger: Ledger) -> list[ReviewView]:
    """Open reviews read straight from the outbox (needs no client or password)."""
    return ledger.read(open_reviews)


def recorded_foreign_activity(ledger: Ledger) -> ForeignActivity | None:
    """The other-install warning read straight from the outbox (for `qrpos doctor`)."""
    return ledger.read(foreign_activity)
