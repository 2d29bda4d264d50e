"""The SQL of reviews (`review`): the sales a person decides, and the history rows each
open review holds for its sale.

Every function takes the connection of the ledger's owner thread; writers are called
inside `Ledger.write` (one `BEGIN IMMEDIATE` transaction each).
"""

from __future__ import annotations

from sqlite3 import Connection

from qrpos.ledger.failures import DamagedRow
from qrpos.ledger.states import IntentRow
from qrpos.ledger.typed_rows import intent_row, stored_json


def upsert_review(
    conn: Connection, intent_id: int, reason: str, candidates_json: str, now: float
) -> None:
    """Record (or replace) the open review of an intent (`claims.candidates_json`)."""
    conn.execute(
        "INSERT INTO review (intent_id, reason, candidates, opened_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (intent_id) DO UPDATE SET reason = excluded.reason,"
        " candidates = excluded.candidates, opened_at = excluded.opened_at,"
        " decided_at = NULL, decision = NULL, decided_tx = NULL, decided_by = NULL",
        (intent_id, reason, candidates_json, now),
    )


def review_of(conn: Connection, intent_id: int) -> tuple[str, str] | None:
    """The review's reason and its candidates (JSON), or None when none was recorded."""
    found = conn.execute(
        "SELECT reason, candidates FROM review WHERE intent_id = ?", (intent_id,)
    ).fetchone()
    return None if found is None else (str(found[0]), str(found[1]))


def in_review(conn: Connection) -> list[IntentRow]:
    """Every sale in needs_review, oldest first."""
    rows = conn.execute("SELECT * FROM charge_intent WHERE state = 'needs_review' ORDER BY id")
    return [intent_row(r) for r in rows.fetchall()]


def offered_rows(conn: Connection) -> dict[int, frozenset[str]]:
    """The rows each open review offers, by sale: held for that sale until a person
    decides it (no other sale is approved or refunded on one of them)."""
    found = conn.execute(
        "SELECT r.intent_id, r.candidates FROM review r JOIN charge_intent i"
        " ON i.id = r.intent_id WHERE i.state = 'needs_review' AND r.decided_at IS NULL"
    ).fetchall()
    held: dict[int, frozenset[str]] = {}
    for intent_id, text in found:
        try:
            items = stored_json(text, "a review's rows")
            held[int(intent_id)] = frozenset(str(item["transaction"]["id"]) for item in items)
        except (KeyError, TypeError) as exc:
            raise DamagedRow(f"a review's rows lack {exc}") from None
    return held


def holder_of(conn: Connection, tx_id: str, besides: int) -> int | None:
    """The sale (other than `besides`) whose proven charge is `tx_id`, if any."""
    row = conn.execute(
        "SELECT id FROM charge_intent WHERE tx_id = ? AND id != ?", (tx_id, besides)
    ).fetchone()
    return None if row is None else int(row[0])


def mark_decided(
    conn: Connection, intent_id: int, *, now: float, what: str, tx_id: str | None, actor: str
) -> None:
    """Close the review of `intent_id` with a person's decision."""
    conn.execute(
        "UPDATE review SET decided_at = ?, decision = ?, decided_tx = ?, decided_by = ?"
        " WHERE intent_id = ?",
        (now, what, tx_id, actor, intent_id),
    )
