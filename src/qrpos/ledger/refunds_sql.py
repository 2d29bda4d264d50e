"""The SQL of a refund's row (`reversal`): queue one, read the queue, and move it
(`update_reversal` refuses a move `states` forbids).

Every function takes the connection of the ledger's owner thread; writers are called
inside `Ledger.write` (one `BEGIN IMMEDIATE` transaction each).
"""

from __future__ import annotations

from sqlite3 import Connection
from typing import Unpack

from qrpos.ledger.failures import IllegalTransition
from qrpos.ledger.states import ReversalChanges, ReversalRow, ReversalState, can_move_reversal
from qrpos.ledger.typed_rows import REVERSAL_FIELDS, reversal_row, said_columns


def get_reversal(conn: Connection, reversal_id: int) -> ReversalRow | None:
    """The reversal with this id, or None."""
    row = conn.execute("SELECT * FROM reversal WHERE id = ?", (reversal_id,)).fetchone()
    return None if row is None else reversal_row(row)


def reversal_for_tx(conn: Connection, tx_id: str) -> ReversalRow | None:
    """The latest reversal of a transaction, or None."""
    row = conn.execute(
        "SELECT * FROM reversal WHERE tx_id = ? ORDER BY id DESC LIMIT 1", (tx_id,)
    ).fetchone()
    return None if row is None else reversal_row(row)


def open_reversals(conn: Connection) -> list[ReversalRow]:
    """Reversals still to be sent or retried, oldest first."""
    rows = conn.execute(
        "SELECT * FROM reversal WHERE state IN ('pending', 'credentials_rejected') ORDER BY id"
    ).fetchall()
    return [reversal_row(r) for r in rows]


def list_reversals(conn: Connection, *, include_final: bool) -> list[ReversalRow]:
    """Reversals, oldest first: all, or only the open ones."""
    if not include_final:
        return open_reversals(conn)
    return [reversal_row(r) for r in conn.execute("SELECT * FROM reversal ORDER BY id").fetchall()]


def insert_reversal(
    conn: Connection,
    *,
    tx_id: str,
    reason: str,
    now: float,
    intent_id: int | None = None,
    amount_mnt: int | None = None,
) -> int:
    """Queue a reversal of `tx_id`."""
    cur = conn.execute(
        "INSERT INTO reversal (tx_id, intent_id, amount_mnt, reason, state, created_at,"
        " shift_id) VALUES (?, ?, ?, ?, 'pending', ?,"
        " (SELECT id FROM shift WHERE closed_at IS NULL))",  # the shift open now
        (tx_id, intent_id, amount_mnt, reason, now),
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


def attach_sale(conn: Connection, reversal_id: int, intent_id: int, amount_mnt: int) -> ReversalRow:
    """Make a refund that belongs to no sale (an owner's `qrpos reverse`) the refund of sale
    `intent_id`: its answer then reaches the sale. A refund that has a sale keeps it."""
    conn.execute(
        "UPDATE reversal SET intent_id = ?, amount_mnt = COALESCE(amount_mnt, ?)"
        " WHERE id = ? AND intent_id IS NULL",
        (intent_id, amount_mnt, reversal_id),
    )
    row = get_reversal(conn, reversal_id)
    assert row is not None
    return row


def update_reversal(
    conn: Connection, reversal_id: int, **changes: Unpack[ReversalChanges]
) -> ReversalRow:
    """Apply `changes` to one reversal; returns the new row."""
    unknown = set(changes) - set(REVERSAL_FIELDS)
    if unknown:
        raise KeyError(f"unknown reversal columns {sorted(unknown)}")
    new_state = changes.get("state")
    if new_state is not None:
        current = get_reversal(conn, reversal_id)
        if current is None:
            raise LookupError(f"no reversal {reversal_id}")
        if not can_move_reversal(current.state, new_state):
            raise IllegalTransition(f"reversal {reversal_id}: {current.state} -> {new_state}")
    if changes:
        columns = said_columns(dict(changes), "message", "message_said")
        cols = ", ".join(f"{name} = ?" for name in columns)
        values = [str(v) if isinstance(v, ReversalState) else v for v in columns.values()]
        sql = f"UPDATE reversal SET {cols} WHERE id = ?"  # noqa: S608 - checked names
        conn.execute(sql, (*values, reversal_id))
    row = get_reversal(conn, reversal_id)
    assert row is not None
    return row
