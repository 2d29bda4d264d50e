"""Reviews (sales a person must settle) and the record of another install's activity.

A review is opened by the resolver when there is no proof either way
(`qrpos.ledger.claims`); it keeps the rows that could be the sale's charge. A person
settles it with one `ReviewDecision`; the decision is checked against those rows and
written to the audit trail with who took it and when.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from qrpos.ledger import records
from qrpos.ledger.claims import Candidate
from qrpos.ledger.listing import intent_view
from qrpos.ledger.records import IntentRow
from qrpos.ledger.states import IntentState, ReversalState
from qrpos.ledger.store import Ledger
from qrpos.ledger.views import IntentView
from qrpos.service import Transaction, parse_transaction

#: how many example transaction ids `ForeignActivity` carries
FOREIGN_EXAMPLES = 5


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
    #: stable code: ambiguous_history, contested_row, reply_mismatch, reversed_row,
    #: foreign_activity, unmeasured_clock
    reason: str
    candidates: tuple[ReviewCandidate, ...]


@dataclass(frozen=True)
class MarkCharged:
    """This row is this sale: the customer paid."""

    tx_id: str


@dataclass(frozen=True)
class RefundRow:
    """This row was charged wrongly: refund it through the reversal queue."""

    tx_id: str


@dataclass(frozen=True)
class MarkNotCharged:
    """Nothing was charged for this sale."""


ReviewDecision = MarkCharged | RefundRow | MarkNotCharged
#: the decision classes, for isinstance checks
DECISIONS = (MarkCharged, RefundRow, MarkNotCharged)


@dataclass(frozen=True)
class ForeignActivity:
    """Another install is charging with this terminal's credentials."""

    first_seen: datetime
    #: distinct rows seen that no sale of this outbox sent
    count: int
    #: a few of them, oldest first
    tx_ids: tuple[str, ...]


class ReviewRefused(Exception):
    """A decision the review cannot take; the message says why (nothing was changed)."""


# --- reviews ----------------------------------------------------------------------------


def open_review(
    conn: sqlite3.Connection,
    intent_id: int,
    reason: str,
    candidates: Sequence[Candidate],
    now: float,
) -> None:
    """Record (or replace) the open review of an intent."""
    payload = [
        {"transaction": c.transaction.to_json(), "others": list(c.others)} for c in candidates
    ]
    conn.execute(
        "INSERT INTO review (intent_id, reason, candidates, opened_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (intent_id) DO UPDATE SET reason = excluded.reason,"
        " candidates = excluded.candidates, opened_at = excluded.opened_at,"
        " decided_at = NULL, decision = NULL, decided_tx = NULL, decided_by = NULL",
        (intent_id, reason, json.dumps(payload, sort_keys=True), now),
    )


def _candidates(text: str) -> tuple[ReviewCandidate, ...]:
    return tuple(
        ReviewCandidate(parse_transaction(item["transaction"]), tuple(item["others"]))
        for item in json.loads(text)
    )


def _view(conn: sqlite3.Connection, row: IntentRow) -> ReviewView:
    found = conn.execute(
        "SELECT reason, candidates FROM review WHERE intent_id = ?", (row.id,)
    ).fetchone()
    if found is None:  # opened before reviews were recorded: the detail says what was seen
        return ReviewView(intent_view(row), "ambiguous_history", ())
    return ReviewView(intent_view(row), str(found[0]), _candidates(str(found[1])))


def open_reviews(conn: sqlite3.Connection) -> list[ReviewView]:
    """Every sale in needs_review, oldest first."""
    rows = conn.execute(
        "SELECT id FROM charge_intent WHERE state = 'needs_review' ORDER BY id"
    ).fetchall()
    views = []
    for (intent_id,) in rows:
        row = records.get_intent(conn, int(intent_id))
        assert row is not None
        views.append(_view(conn, row))
    return views


def offered_rows(conn: sqlite3.Connection) -> dict[int, frozenset[str]]:
    """The rows each open review offers, by sale: held for that sale until a person
    settles it (no other sale is approved or refunded on one of them)."""
    found = conn.execute(
        "SELECT r.intent_id, r.candidates FROM review r JOIN charge_intent i"
        " ON i.id = r.intent_id WHERE i.state = 'needs_review' AND r.decided_at IS NULL"
    ).fetchall()
    return {
        int(intent_id): frozenset(str(item["transaction"]["id"]) for item in json.loads(text))
        for intent_id, text in found
    }


def _describe(decision: ReviewDecision) -> str:
    if isinstance(decision, MarkCharged):
        return f"charged as {decision.tx_id}"
    if isinstance(decision, RefundRow):
        return f"refund {decision.tx_id}"
    return "not charged"


def _checked_candidate(conn: sqlite3.Connection, view: ReviewView, tx_id: str) -> Transaction:
    by_id = {c.transaction.id: c.transaction for c in view.candidates}
    if tx_id not in by_id:
        offered = ", ".join(by_id) or "none"
        raise ReviewRefused(
            f"{tx_id[:40]} is not among the rows of sale #{view.intent.id} (rows: {offered})"
        )
    holder = conn.execute(
        "SELECT id FROM charge_intent WHERE tx_id = ? AND id != ?", (tx_id, int(view.intent.id))
    ).fetchone()
    if holder is not None:
        raise ReviewRefused(f"{tx_id} already belongs to sale #{holder[0]}")
    return by_id[tx_id]


def decide(
    conn: sqlite3.Connection, intent_id: int, decision: ReviewDecision, actor: str, now: float
) -> tuple[IntentRow, int | None]:
    """Apply a person's decision; returns the intent and the queued reversal's id (if any).

    Raises `ReviewRefused` for a sale not in review, a row that is not among its
    candidates, or one another sale owns. Runs inside one write transaction.
    """
    row = records.get_intent(conn, intent_id)
    if row is None:
        raise ReviewRefused(f"no sale #{intent_id}")
    if row.state is not IntentState.NEEDS_REVIEW:
        raise ReviewRefused(f"sale #{intent_id} is {row.state}, not waiting for a review")
    view = _view(conn, row)
    what = _describe(decision)
    reversal_id: int | None = None
    if isinstance(decision, MarkNotCharged):
        row = records.update_intent(
            conn,
            intent_id,
            state=IntentState.NOT_CHARGED,
            charged=0,
            proof="review",
            token=None,
            resolved_at=now,
            last_detail=f"a person decided: not charged ({actor})",
        )
    else:
        tx = _checked_candidate(conn, view, decision.tx_id)
        refund = isinstance(decision, RefundRow)
        if refund:
            existing = records.reversal_for_tx(conn, tx.id)
            if existing is None or existing.state is ReversalState.REFUSED:
                reversal_id = records.insert_reversal(
                    conn,
                    tx_id=tx.id,
                    reason="review",
                    now=now,
                    intent_id=intent_id,
                    amount_mnt=tx.amount_mnt,
                )
            else:
                reversal_id = existing.id
        elif records.reversal_for_tx(conn, tx.id) is not None:
            raise ReviewRefused(f"{tx.id} is being refunded; it cannot be this sale's payment")
        row = records.update_intent(
            conn,
            intent_id,
            state=IntentState.REFUNDED_PER_REVIEW if refund else IntentState.CHARGED_PER_REVIEW,
            charged=1,
            proof="review",
            tx_id=tx.id,
            tx_json=json.dumps(tx.to_json(), sort_keys=True),
            token=None,
            resolved_at=now,
            last_detail=f"a person decided: {what} ({actor})",
        )
    conn.execute(
        "UPDATE review SET decided_at = ?, decision = ?, decided_tx = ?, decided_by = ?"
        " WHERE intent_id = ?",
        (now, what, getattr(decision, "tx_id", None), actor, intent_id),
    )
    records.log_attempt(
        conn,
        kind="review",
        n=1,
        sent_at=now,
        intent_id=intent_id,
        outcome=type(decision).__name__,
        detail=f"{what}; decided by {actor}",
    )
    return row, reversal_id


# --- another install ---------------------------------------------------------------------


def record_foreign(
    conn: sqlite3.Connection,
    rows: Iterable[Transaction],
    intent_id: int,
    now: float,
    surplus: Collection[str] = (),
) -> None:
    """Remember rows no sale of this outbox sent.

    A row in `surplus` was left over only because there were more rows an intent could own
    than intents: which of them is the stranger's is not known, so it raises the warning
    but is not set aside as another install's (`foreign_ids`); seen later as a row no intent
    could own, it is.
    """
    for tx in rows:
        conn.execute(
            "INSERT INTO foreign_row (tx_id, amount_mnt, created_at, seen_at, intent_id,"
            " surplus) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tx_id) DO UPDATE SET"
            " surplus = MIN(surplus, excluded.surplus)",
            (tx.id, tx.amount_mnt, tx.created_at.isoformat(), now, intent_id, tx.id in surplus),
        )


def foreign_ids(conn: sqlite3.Connection, tx_ids: Sequence[str]) -> set[str]:
    """Which of these rows were seen as another install's (a cleared warning included)."""
    if not tx_ids:
        return set()
    marks = ", ".join("?" for _ in tx_ids)
    # the placeholders are ours; the ids go through parameters
    sql = f"SELECT tx_id FROM foreign_row WHERE surplus = 0 AND tx_id IN ({marks})"  # noqa: S608
    return {str(r[0]) for r in conn.execute(sql, tuple(tx_ids)).fetchall()}


def foreign_suspect_until(conn: sqlite3.Connection) -> datetime | None:
    """Up to when (service time) a row may be another install's charge that this kiosk
    never saw: the latest cleared warning's moment, or None when none was ever cleared."""
    row = conn.execute("SELECT MAX(suspect_until) FROM foreign_row").fetchone()
    if row is None or row[0] is None:
        return None
    return datetime.fromtimestamp(float(row[0]), UTC)


def foreign_activity(conn: sqlite3.Connection) -> ForeignActivity | None:
    """The warning while it is not cleared, or None."""
    rows = conn.execute(
        "SELECT tx_id, seen_at FROM foreign_row WHERE cleared_at IS NULL ORDER BY seen_at, tx_id"
    ).fetchall()
    if not rows:
        return None
    return ForeignActivity(
        first_seen=datetime.fromtimestamp(float(rows[0][1]), UTC),
        count=len(rows),
        tx_ids=tuple(str(r[0]) for r in rows[:FOREIGN_EXAMPLES]),
    )


def clear_foreign(conn: sqlite3.Connection, now: float, suspect_until: float) -> None:
    """An owner cleared the warning (after rotating the password, say).

    The other install may have charged up to the moment it was re-paired, and not every
    one of its rows lay in a window this kiosk looked at: rows committed up to
    `suspect_until` (the service's clock at the clear, with margin) stay doubtful, so they
    go to a person rather than prove a sale (`foreign_suspect_until`).
    """
    conn.execute(
        "UPDATE foreign_row SET cleared_at = ?, suspect_until = ? WHERE cleared_at IS NULL",
        (now, suspect_until),
    )
    records.log_attempt(
        conn, kind="foreign", n=1, sent_at=now, outcome="cleared", detail="cleared by an owner"
    )


def review_views(ledger: Ledger) -> list[ReviewView]:
    """Open reviews read straight from the outbox (needs no client or password)."""
    return ledger.read(open_reviews)


def recorded_foreign_activity(ledger: Ledger) -> ForeignActivity | None:
    """The other-install warning read straight from the outbox (for `qrpos doctor`)."""
    return ledger.read(foreign_activity)
