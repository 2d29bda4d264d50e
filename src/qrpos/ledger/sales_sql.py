"""The SQL of a sale's row (`charge_intent`): what blocks a new sale, a token's sales,
the lists, writing a sale and moving it (`update_intent` refuses a move `states` forbids),
and the sales a look-up weighs.

Every function takes the connection of the ledger's owner thread; writers are called
inside `Ledger.write` (one `BEGIN IMMEDIATE` transaction each).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from sqlite3 import Connection
from typing import Any, Final, Unpack

from qrpos.ledger.failures import IllegalTransition
from qrpos.ledger.states import OPEN_SQL as _OPEN_SQL
from qrpos.ledger.states import IntentChanges, IntentRow, IntentState, can_move
from qrpos.ledger.typed_rows import INTENT_FIELDS, intent_row, said_columns
from qrpos.redact import token_tail

#: "open" as SQL, written from its one definition (`states.is_open`)
OPEN_SQL: Final = _OPEN_SQL


def token_digest(token: str) -> str:
    """SHA-256 of the exact token: lets a rerun find its sale without keeping the token."""
    return hashlib.sha256(token.encode("utf-8", errors="surrogatepass")).hexdigest()


def get_intent(conn: Connection, intent_id: int) -> IntentRow | None:
    """The intent with this id, or None."""
    row = conn.execute("SELECT * FROM charge_intent WHERE id = ?", (intent_id,)).fetchone()
    return None if row is None else intent_row(row)


def open_intents(conn: Connection) -> list[IntentRow]:
    """Intents that block a new sale, oldest first."""
    sql = f"SELECT * FROM charge_intent WHERE {OPEN_SQL} ORDER BY id"  # noqa: S608 - constant
    rows = conn.execute(sql).fetchall()
    return [intent_row(r) for r in rows]


#: the intents of a token that stop a new sale with it (`ChargeDesk.charge`)
_TOKEN_STOPS: Final = {
    "paid": "tx_id IS NOT NULL",
    "in_review": "state = 'needs_review'",
}


def _first_with_token(conn: Connection, digest: str, stop: str) -> IntentRow | None:
    # the condition is one of ours (`_TOKEN_STOPS`); the digest goes through a parameter
    sql = (
        f"SELECT * FROM charge_intent WHERE token_sha256 = ? AND {_TOKEN_STOPS[stop]}"  # noqa: S608
        " ORDER BY id LIMIT 1"
    )
    row = conn.execute(sql, (digest,)).fetchone()
    return None if row is None else intent_row(row)


def paid_with_token(conn: Connection, digest: str) -> IntentRow | None:
    """The intent whose transaction this token (by its digest) already paid, or None.
    The service retires a token at its first successful charge, whatever happened next."""
    return _first_with_token(conn, digest, "paid")


def in_review_with_token(conn: Connection, digest: str) -> IntentRow | None:
    """The intent of this token (by its digest) that waits for a person's review, or None."""
    return _first_with_token(conn, digest, "in_review")


def watched_intents(conn: Connection) -> list[IntentRow]:
    """Abandoned intents whose history is still watched, oldest first."""
    rows = conn.execute(
        "SELECT * FROM charge_intent WHERE state = 'abandoned' AND watching = 1 ORDER BY id"
    ).fetchall()
    return [intent_row(r) for r in rows]


def list_intents(
    conn: Connection,
    *,
    include_final: bool,
    created_from: float | None = None,
    created_to: float | None = None,
) -> list[IntentRow]:
    """Intents, oldest first: all, or only those needing attention."""
    where = ["1 = 1"]
    params: list[Any] = []
    if not include_final:
        where.append(
            f"({OPEN_SQL} OR state = 'needs_review' OR (state = 'abandoned' AND watching = 1))"
        )
    if created_from is not None:
        where.append("created_at >= ?")
        params.append(created_from)
    if created_to is not None:
        where.append("created_at < ?")
        params.append(created_to)
    # the clauses are our own constants; values go through parameters
    sql = f"SELECT * FROM charge_intent WHERE {' AND '.join(where)} ORDER BY id"  # noqa: S608
    return [intent_row(r) for r in conn.execute(sql, params).fetchall()]


def intents_placed_between(
    conn: Connection, from_ts: float, to_ts: float, reach_s: float
) -> list[IntentRow]:
    """The sales that may fall in [from_ts, to_ts): made then by the kiosk's clock, or
    answered with a row the service dated within a day of it (made within `reach_s` of
    it by the kiosk's clock). A superset, oldest first: the caller places each exactly.
    The service dates rows in UTC (RFC 3339); its first 19 characters compare as text."""
    day = 86_400.0

    def text(ts: float) -> str:
        return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S")

    # a damaged row (not JSON) is placed by the kiosk's clock, never fails the read
    stamp = (
        "substr(CASE WHEN json_valid(tx_json) THEN json_extract(tx_json, '$.createdAt') END, 1, 19)"
    )
    sql = (
        "SELECT * FROM charge_intent WHERE (created_at >= ? AND created_at < ?)"  # noqa: S608
        f" OR (tx_json IS NOT NULL AND created_at >= ? AND created_at < ?"
        f" AND {stamp} >= ? AND {stamp} < ?) ORDER BY id"
    )
    params = (from_ts, to_ts, from_ts - reach_s, to_ts + reach_s, text(from_ts - day),
              text(to_ts + day))  # fmt: skip
    return [intent_row(r) for r in conn.execute(sql, params).fetchall()]


def insert_intent(
    conn: Connection,
    *,
    idem_key: str,
    token: str,
    amount_mnt: int,
    now: float,
    boot: tuple[str | None, float | None] = (None, None),
    username: str | None = None,
) -> int:
    """Store a new intent already marked as being sent (attempt 1 in flight), stamped with
    the first send's boot clock (`boot`) and the pairing it goes out under (`username`)."""
    cur = conn.execute(
        "INSERT INTO charge_intent (idem_key, token, token_sha256, token_tail, amount_mnt,"
        " state, created_at, first_sent_at, last_sent_at, attempts, in_flight,"
        " first_sent_boot, first_sent_up, username, shift_id)"
        " VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, 1, 1, ?, ?, ?,"
        " (SELECT id FROM shift WHERE closed_at IS NULL))",  # the shift open now
        (
            idem_key,
            token,
            token_digest(token),
            token_tail(token),
            amount_mnt,
            now,
            now,
            now,
            boot[0],
            boot[1],
            username,
        ),
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


def update_intent(conn: Connection, intent_id: int, **changes: Unpack[IntentChanges]) -> IntentRow:
    """Apply `changes` to one intent, refusing an illegal state move; returns the new row."""
    current = get_intent(conn, intent_id)
    if current is None:
        raise LookupError(f"no charge intent {intent_id}")
    new_state = changes.get("state")
    if new_state is not None and not can_move(current.state, IntentState(new_state)):
        raise IllegalTransition(f"intent {intent_id}: {current.state} -> {new_state}")
    if changes:
        unknown = set(changes) - set(INTENT_FIELDS)
        if unknown:
            raise KeyError(f"unknown intent columns {sorted(unknown)}")
        columns = said_columns(dict(changes), "last_detail", "detail_said")
        cols = ", ".join(f"{name} = ?" for name in columns)
        values = [str(v) if isinstance(v, IntentState) else v for v in columns.values()]
        # column names were checked against the dataclass above; values are parameters
        sql = f"UPDATE charge_intent SET {cols} WHERE id = ?"  # noqa: S608
        conn.execute(sql, (*values, intent_id))
    updated = get_intent(conn, intent_id)
    assert updated is not None
    return updated


def amount_of_tx(conn: Connection, tx_id: str) -> int | None:
    """The amount of our own charge with this transaction id, when we have it."""
    row = conn.execute("SELECT amount_mnt FROM charge_intent WHERE tx_id = ?", (tx_id,)).fetchone()
    return None if row is None else int(row[0])


def neighbours(conn: Connection, lo: float, hi: float, tx_ids: Sequence[str]) -> list[IntentRow]:
    """Sales that could matter to a look-up: every one whose `charged` is unknown, those
    created between `lo` and `hi` (local time), and those that hold one of `tx_ids`."""
    marks = ", ".join("?" for _ in tx_ids) or "NULL"
    # the placeholders are ours; the values go through parameters
    where = f"charged IS NULL OR created_at BETWEEN ? AND ? OR tx_id IN ({marks})"
    sql = f"SELECT * FROM charge_intent WHERE {where} ORDER BY id"  # noqa: S608
    return [intent_row(r) for r in conn.execute(sql, (lo, hi, *tx_ids)).fetchall()]


def known_tx(conn: Connection, tx_ids: Sequence[str]) -> set[str]:
    """Which of these rows the outbox accounts for: owned by an intent or refunded by us."""
    if not tx_ids:
        return set()
    marks = ", ".join("?" for _ in tx_ids)
    # the placeholders are ours; the ids go through parameters
    owned = conn.execute(
        f"SELECT tx_id FROM charge_intent WHERE tx_id IN ({marks})",  # noqa: S608
        tuple(tx_ids),
    ).fetchall()
    refunded = conn.execute(
        f"SELECT tx_id FROM reversal WHERE tx_id IN ({marks})",  # noqa: S608
        tuple(tx_ids),
    ).fetchall()
    return {str(r[0]) for r in (*owned, *refunded)}
