"""The outbox's rows as typed values, and the SQL that reads and changes them.

Every function takes the connection of the ledger's owner thread; writers are called
inside `Ledger.write` (one `BEGIN IMMEDIATE` transaction each).
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, fields
from typing import Any, Final, TypedDict, Unpack

# the rows' types live in facts (pure); re-exported for the modules that read rows here
from qrpos.ledger.facts import IntentChanges as IntentChanges
from qrpos.ledger.facts import IntentRow as IntentRow
from qrpos.ledger.facts import Proof as Proof
from qrpos.ledger.states import IntentState, ReversalState, can_move
from qrpos.redact import token_tail

OPEN_SQL = (
    "(state IN ('pending', 'unresolved') OR (state = 'credentials_rejected' AND charged IS NULL))"
)


class IllegalTransition(RuntimeError):
    """A bug tried a move the state machine forbids; the transaction is rolled back."""


@dataclass(frozen=True)
class ReversalRow:
    """One `reversal` row."""

    id: int
    tx_id: str
    intent_id: int | None
    amount_mnt: int | None
    reason: str
    state: ReversalState
    created_at: float
    attempts: int
    next_try_at: float | None
    last_status: int | None
    message: str | None
    resolved_at: float | None


_INTENT_FIELDS = tuple(f.name for f in fields(IntentRow))
_REVERSAL_FIELDS = tuple(f.name for f in fields(ReversalRow))


def token_digest(token: str) -> str:
    """SHA-256 of the exact token: lets a rerun find its sale without keeping the token."""
    return hashlib.sha256(token.encode("utf-8", errors="surrogatepass")).hexdigest()


def _intent(row: sqlite3.Row) -> IntentRow:
    values = {name: row[name] for name in _INTENT_FIELDS}
    values["state"] = IntentState(values["state"])
    return IntentRow(**values)


def _reversal(row: sqlite3.Row) -> ReversalRow:
    values = {name: row[name] for name in _REVERSAL_FIELDS}
    values["state"] = ReversalState(values["state"])
    return ReversalRow(**values)


# --- charge intents ---------------------------------------------------------------------


def get_intent(conn: sqlite3.Connection, intent_id: int) -> IntentRow | None:
    """The intent with this id, or None."""
    row = conn.execute("SELECT * FROM charge_intent WHERE id = ?", (intent_id,)).fetchone()
    return None if row is None else _intent(row)


def open_intents(conn: sqlite3.Connection) -> list[IntentRow]:
    """Intents that block a new sale, oldest first."""
    sql = f"SELECT * FROM charge_intent WHERE {OPEN_SQL} ORDER BY id"  # noqa: S608 - constant
    rows = conn.execute(sql).fetchall()
    return [_intent(r) for r in rows]


#: the intents of a token that stop a new sale with it (`ChargeDesk.charge`)
_TOKEN_STOPS: Final = {
    "paid": "tx_id IS NOT NULL",
    "in_review": "state = 'needs_review'",
}


def _first_with_token(conn: sqlite3.Connection, digest: str, stop: str) -> IntentRow | None:
    # the condition is one of ours (`_TOKEN_STOPS`); the digest goes through a parameter
    sql = (
        f"SELECT * FROM charge_intent WHERE token_sha256 = ? AND {_TOKEN_STOPS[stop]}"  # noqa: S608
        " ORDER BY id LIMIT 1"
    )
    row = conn.execute(sql, (digest,)).fetchone()
    return None if row is None else _intent(row)


def paid_with_token(conn: sqlite3.Connection, digest: str) -> IntentRow | None:
    """The intent whose transaction this token (by its digest) already paid, or None.
    The service retires a token at its first successful charge, whatever happened next."""
    return _first_with_token(conn, digest, "paid")


def in_review_with_token(conn: sqlite3.Connection, digest: str) -> IntentRow | None:
    """The intent of this token (by its digest) that waits for a person's review, or None."""
    return _first_with_token(conn, digest, "in_review")


def watched_intents(conn: sqlite3.Connection) -> list[IntentRow]:
    """Abandoned intents whose history is still watched, oldest first."""
    rows = conn.execute(
        "SELECT * FROM charge_intent WHERE state = 'abandoned' AND watching = 1 ORDER BY id"
    ).fetchall()
    return [_intent(r) for r in rows]


def list_intents(
    conn: sqlite3.Connection,
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
    return [_intent(r) for r in conn.execute(sql, params).fetchall()]


def insert_intent(
    conn: sqlite3.Connection,
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
        " first_sent_boot, first_sent_up, username)"
        " VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, 1, 1, ?, ?, ?)",
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


def update_intent(
    conn: sqlite3.Connection, intent_id: int, **changes: Unpack[IntentChanges]
) -> IntentRow:
    """Apply `changes` to one intent, refusing an illegal state move; returns the new row."""
    current = get_intent(conn, intent_id)
    if current is None:
        raise LookupError(f"no charge intent {intent_id}")
    new_state = changes.get("state")
    if new_state is not None and not can_move(current.state, IntentState(new_state)):
        raise IllegalTransition(f"intent {intent_id}: {current.state} -> {new_state}")
    if changes:
        unknown = set(changes) - set(_INTENT_FIELDS)
        if unknown:
            raise KeyError(f"unknown intent columns {sorted(unknown)}")
        cols = ", ".join(f"{name} = ?" for name in changes)
        values = [str(v) if isinstance(v, IntentState) else v for v in changes.values()]
        # column names were checked against the dataclass above; values are parameters
        sql = f"UPDATE charge_intent SET {cols} WHERE id = ?"  # noqa: S608
        conn.execute(sql, (*values, intent_id))
    updated = get_intent(conn, intent_id)
    assert updated is not None
    return updated


def log_attempt(
    conn: sqlite3.Connection,
    *,
    kind: str,
    n: int,
    sent_at: float,
    outcome: str,
    intent_id: int | None = None,
    reversal_id: int | None = None,
    elapsed_s: float | None = None,
    status: int | None = None,
    detail: str | None = None,
    server_date: float | None = None,
) -> None:
    """Append one line to the audit trail of attempts and lookups."""
    conn.execute(
        "INSERT INTO attempt (intent_id, reversal_id, kind, n, sent_at, elapsed_s, status,"
        " outcome, detail, server_date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (intent_id, reversal_id, kind, n, sent_at, elapsed_s, status, outcome, detail, server_date),
    )


def log_exchange(
    conn: sqlite3.Connection,
    *,
    kind: str,
    n: int,
    sent_at: float,
    outcome: Any,
    intent_id: int | None = None,
    reversal_id: int | None = None,
    detail: str | None = None,
) -> None:
    """`log_attempt` for a service outcome: status, timing and the server's clock from it."""
    exchange = outcome.exchange
    log_attempt(
        conn,
        kind=kind,
        n=n,
        sent_at=sent_at,
        intent_id=intent_id,
        reversal_id=reversal_id,
        elapsed_s=exchange.elapsed_s,
        status=exchange.status,
        outcome=type(outcome).__name__,
        detail=detail,
        server_date=exchange.server_date.timestamp() if exchange.server_date else None,
    )


# --- reversals --------------------------------------------------------------------------


def get_reversal(conn: sqlite3.Connection, reversal_id: int) -> ReversalRow | None:
    """The reversal with this id, or None."""
    row = conn.execute("SELECT * FROM reversal WHERE id = ?", (reversal_id,)).fetchone()
    return None if row is None else _reversal(row)


def reversal_for_tx(conn: sqlite3.Connection, tx_id: str) -> ReversalRow | None:
    """The latest reversal of a transaction, or None."""
    row = conn.execute(
        "SELECT * FROM reversal WHERE tx_id = ? ORDER BY id DESC LIMIT 1", (tx_id,)
    ).fetchone()
    return None if row is None else _reversal(row)


def open_reversals(conn: sqlite3.Connection) -> list[ReversalRow]:
    """Reversals still to be sent or retried, oldest first."""
    rows = conn.execute(
        "SELECT * FROM reversal WHERE state IN ('pending', 'credentials_rejected') ORDER BY id"
    ).fetchall()
    return [_reversal(r) for r in rows]


def list_reversals(conn: sqlite3.Connection, *, include_final: bool) -> list[ReversalRow]:
    """Reversals, oldest first: all, or only the open ones."""
    if not include_final:
        return open_reversals(conn)
    return [_reversal(r) for r in conn.execute("SELECT * FROM reversal ORDER BY id").fetchall()]


def insert_reversal(
    conn: sqlite3.Connection,
    *,
    tx_id: str,
    reason: str,
    now: float,
    intent_id: int | None = None,
    amount_mnt: int | None = None,
) -> int:
    """Queue a reversal of `tx_id`."""
    cur = conn.execute(
        "INSERT INTO reversal (tx_id, intent_id, amount_mnt, reason, state, created_at)"
        " VALUES (?, ?, ?, ?, 'pending', ?)",
        (tx_id, intent_id, amount_mnt, reason, now),
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


class ReversalChanges(TypedDict, total=False):
    """The columns a reversal's move may change, with their types."""

    state: ReversalState
    attempts: int
    next_try_at: float | None
    last_status: int | None
    message: str | None
    resolved_at: float | None


def update_reversal(
    conn: sqlite3.Connection, reversal_id: int, **changes: Unpack[ReversalChanges]
) -> ReversalRow:
    """Apply `changes` to one reversal; returns the new row."""
    unknown = set(changes) - set(_REVERSAL_FIELDS)
    if unknown:
        raise KeyError(f"unknown reversal columns {sorted(unknown)}")
    if changes:
        cols = ", ".join(f"{name} = ?" for name in changes)
        values = [str(v) if isinstance(v, ReversalState) else v for v in changes.values()]
        sql = f"UPDATE reversal SET {cols} WHERE id = ?"  # noqa: S608 - checked names
        conn.execute(sql, (*values, reversal_id))
    row = get_reversal(conn, reversal_id)
    assert row is not None
    return row


def amount_of_tx(conn: sqlite3.Connection, tx_id: str) -> int | None:
    """The amount of our own charge with this transaction id, when we have it."""
    row = conn.execute("SELECT amount_mnt FROM charge_intent WHERE tx_id = ?", (tx_id,)).fetchone()
    return None if row is None else int(row[0])
