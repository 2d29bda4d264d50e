"""The SQL of cashiers and shifts (`cashier`, `shift`), and the sales and refunds a
shift's X/Z report counts.

Every function takes the connection of the ledger's owner thread; writers are called
inside `Ledger.write` (one `BEGIN IMMEDIATE` transaction each).
"""

from __future__ import annotations

from collections.abc import Sequence
from sqlite3 import Connection
from typing import Any, Final

from qrpos.ledger.failures import IllegalTransition
from qrpos.ledger.money import Money, money_sql
from qrpos.ledger.states import IntentRow, ReversalRow
from qrpos.ledger.typed_rows import intent_row, reversal_row

#: `money.money_of` as a SQL expression on `charge_intent` (unaliased, in a query whose
#: `reversal` table is reachable): charged until a confirmed refund of its row
MONEY_SQL: Final = money_sql(
    "EXISTS (SELECT 1 FROM reversal WHERE reversal.state = 'refunded'"
    " AND reversal.tx_id = charge_intent.tx_id)"
)

_CASHIER_COLUMNS = "id, name, pin, active, created_at"
_SHIFT_COLUMNS = "id, cashier_id, opened_at, closed_at, closed_by, z_number, z_report"


def insert_cashier(conn: Connection, name: str, pin_record: str, at: float) -> int:
    """A new cashier (`pin_record`: the PIN's salted hash); IntegrityError when an active
    cashier already has that name."""
    cur = conn.execute(
        "INSERT INTO cashier (name, pin, created_at) VALUES (?, ?, ?)", (name, pin_record, at)
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


def cashier_rows(conn: Connection, *, include_removed: bool = False) -> list[tuple[Any, ...]]:
    """(id, name, pin record, active, created_at) of the cashiers, by name."""
    where = "" if include_removed else " WHERE active = 1"
    sql = f"SELECT {_CASHIER_COLUMNS} FROM cashier{where} ORDER BY name, id"  # noqa: S608
    return [tuple(row) for row in conn.execute(sql).fetchall()]


def update_cashier(
    conn: Connection,
    cashier_id: int,
    *,
    name: str | None = None,
    pin_record: str | None = None,
    active: bool | None = None,
) -> int:
    """Rename, give a new PIN or remove (active = False: the shifts keep their name)."""
    changes = {"name": name, "pin": pin_record, "active": None if active is None else int(active)}
    sets = {k: v for k, v in changes.items() if v is not None}
    if not sets:
        return 0
    assignments = ", ".join(f"{column} = ?" for column in sets)  # our own column names
    cur = conn.execute(
        f"UPDATE cashier SET {assignments} WHERE id = ?",  # noqa: S608
        (*sets.values(), cashier_id),
    )
    return cur.rowcount


def insert_shift(conn: Connection, cashier_id: int, at: float) -> int:
    """Open a shift; IntegrityError when one is open already."""
    cur = conn.execute("INSERT INTO shift (cashier_id, opened_at) VALUES (?, ?)", (cashier_id, at))
    assert cur.lastrowid is not None
    return cur.lastrowid


def shift_rows(
    conn: Connection, *, shift_id: int | None = None, open_only: bool = False
) -> list[tuple[Any, ...]]:
    """(id, cashier_id, opened_at, closed_at, closed_by, z_number, z_report), oldest first."""
    where, params = ["1 = 1"], []
    if shift_id is not None:
        where.append("id = ?")
        params.append(shift_id)
    if open_only:
        where.append("closed_at IS NULL")
    sql = f"SELECT {_SHIFT_COLUMNS} FROM shift WHERE {' AND '.join(where)} ORDER BY id"  # noqa: S608
    return [tuple(row) for row in conn.execute(sql, params).fetchall()]


def next_z_number(conn: Connection) -> int:
    """The number the next Z report takes (1, 2, …: a running count on the till)."""
    row = conn.execute("SELECT COALESCE(MAX(z_number), 0) + 1 FROM shift").fetchone()
    return int(row[0])


def close_shift(
    conn: Connection, shift_id: int, *, at: float, by: str, z_number: int, z_report: str
) -> None:
    """Close the open shift `shift_id` with its Z, frozen from now on."""
    cur = conn.execute(
        "UPDATE shift SET closed_at = ?, closed_by = ?, z_number = ?, z_report = ?"
        " WHERE id = ? AND closed_at IS NULL",
        (at, by, z_number, z_report, shift_id),
    )
    if cur.rowcount != 1:
        raise IllegalTransition(f"shift {shift_id} is not open")


def shift_sales(conn: Connection, shift_id: int | None) -> list[IntentRow]:
    """The sales stamped with `shift_id` (None: with no shift), oldest first."""
    if shift_id is None:
        rows = conn.execute(
            "SELECT * FROM charge_intent WHERE shift_id IS NULL ORDER BY id"
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT * FROM charge_intent WHERE shift_id = ? ORDER BY id", (shift_id,)
        ).fetchall()
    return [intent_row(r) for r in rows]


def intents_by_id(conn: Connection, intent_ids: Sequence[int]) -> list[IntentRow]:
    """The intents with these ids (the open sales an earlier Z named)."""
    if not intent_ids:
        return []
    marks = ", ".join("?" for _ in intent_ids)
    rows = conn.execute(
        f"SELECT * FROM charge_intent WHERE id IN ({marks}) ORDER BY id",  # noqa: S608
        tuple(intent_ids),
    ).fetchall()
    return [intent_row(r) for r in rows]


def refunded_tx_ids(conn: Connection, tx_ids: Sequence[str]) -> set[str]:
    """Which of these transactions have a refund the service confirmed."""
    if not tx_ids:
        return set()
    marks = ", ".join("?" for _ in tx_ids)
    rows = conn.execute(
        f"SELECT tx_id FROM reversal WHERE state = 'refunded' AND tx_id IN ({marks})",  # noqa: S608
        tuple(tx_ids),
    ).fetchall()
    return {str(r[0]) for r in rows}


def shift_refunds(conn: Connection, shift_id: int | None) -> list[ReversalRow]:
    """The refunds queued during the shift (None: with no shift open), oldest first."""
    if shift_id is None:
        rows = conn.execute("SELECT * FROM reversal WHERE shift_id IS NULL ORDER BY id").fetchall()
    else:
        rows = conn.execute(
            "SELECT * FROM reversal WHERE shift_id = ? ORDER BY id", (shift_id,)
        ).fetchall()
    return [reversal_row(r) for r in rows]


def insert_z_lines(
    conn: Connection, z_number: int, lines: Sequence[tuple[int, Money, int]]
) -> None:
    """What Z `z_number` said of each sale's money: (intent, money, amount), frozen."""
    conn.executemany(
        "INSERT INTO z_line (z_number, intent_id, money, amount_mnt) VALUES (?, ?, ?, ?)",
        [(z_number, intent, str(money), amount) for intent, money, amount in lines],
    )


def lined_intents(conn: Connection, intent_ids: Sequence[int]) -> set[int]:
    """Which of these sales a Z has a line for."""
    if not intent_ids:
        return set()
    marks = ", ".join("?" for _ in intent_ids)
    rows = conn.execute(
        f"SELECT DISTINCT intent_id FROM z_line WHERE intent_id IN ({marks})",  # noqa: S608
        tuple(intent_ids),
    ).fetchall()
    return {int(r[0]) for r in rows}


#: the sales whose money has moved since the last Z line said it: (intent, the Z of its
#: shift, the money last said, the money now (`MONEY_SQL`), amount, state). Only a line
#: that may still move is looked at: an unknown one, or a charged one whose row has a
#: confirmed refund (a charge stays charged until its refund lands: `money.money_of`)
_MOVED_SQL = f"""
WITH candidate (intent_id) AS (
    SELECT intent_id FROM z_line WHERE money = '{Money.UNKNOWN.value}'
    UNION
    SELECT charge_intent.id FROM reversal
      JOIN charge_intent ON charge_intent.tx_id = reversal.tx_id
     WHERE reversal.state = 'refunded'
)
SELECT charge_intent.id,
       (SELECT MIN(z_number) FROM z_line WHERE z_line.intent_id = candidate.intent_id),
       last.money, {MONEY_SQL}, charge_intent.amount_mnt, charge_intent.state
  FROM candidate
  JOIN z_line AS last ON last.id = (
        SELECT MAX(z_line.id) FROM z_line WHERE z_line.intent_id = candidate.intent_id)
  JOIN charge_intent ON charge_intent.id = candidate.intent_id
 WHERE last.money IN ('{Money.UNKNOWN.value}', '{Money.CHARGED.value}')
   AND {MONEY_SQL} <> last.money
 ORDER BY charge_intent.id
"""  # noqa: S608 - our own constants


def moved_since_z(conn: Connection) -> list[tuple[int, int, Money, Money, int, str]]:
    """The sales a Z has a line for whose money has moved since (see `_MOVED_SQL`)."""
    return [
        (int(i), int(z), Money(was), Money(now), int(amount), str(state))
        for i, z, was, now, amount, state in conn.execute(_MOVED_SQL).fetchall()
    ]
