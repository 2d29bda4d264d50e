"""The SQL of the receipt printer's queue (`print_job`), and the states a slip in it has
(`PrintState`, stored as their values).

Every function takes the connection of the ledger's owner thread; writers are called
inside `Ledger.write` (one `BEGIN IMMEDIATE` transaction each).
"""

from __future__ import annotations

from enum import StrEnum
from sqlite3 import Connection
from typing import Any

from qrpos.ledger.failures import DamagedRow


class PrintState(StrEnum):
    """Where a slip in the printer's queue stands: the `print_job.state` column, whose
    stored values these are (the schema's CHECK allows exactly them)."""

    #: written, not yet taken whole by the printer (a failed try leaves it here)
    QUEUED = "queued"
    #: the printer took it whole: never sent again
    PRINTED = "printed"
    #: it can never print (its row cannot be read): out of the queue, kept with why
    DROPPED = "dropped"


def _state(value: object) -> PrintState:
    """The stored state as a `PrintState`, or `DamagedRow` when it is none."""
    if not isinstance(value, str) or value not in {str(s) for s in PrintState}:
        raise DamagedRow(f"print state {str(value)[:20]!r} is not a state")
    return PrintState(value)


def queue_print(
    conn: Connection, kind: str, ref: str, slip: str, *, reprint: bool, at: float
) -> int | None:
    """Queue a slip; None when the same first slip of `kind` and `ref` is already queued
    or printed (a reprint is always queued)."""
    cur = conn.execute(
        "INSERT OR IGNORE INTO print_job (created_at, kind, ref, reprint, slip) "
        "VALUES (?, ?, ?, ?, ?)",
        (at, kind, ref, int(reprint), slip),
    )
    return cur.lastrowid if cur.rowcount else None


def next_print(conn: Connection) -> tuple[int, str] | None:
    """The oldest queued slip: (job id, slip JSON)."""
    row = conn.execute(
        "SELECT id, slip FROM print_job WHERE state = ? ORDER BY id LIMIT 1",
        (PrintState.QUEUED.value,),
    ).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def mark_printed(conn: Connection, job_id: int, at: float) -> None:
    """The printer took the slip whole: never sent again."""
    conn.execute(
        "UPDATE print_job SET state = ?, printed_at = ?, tries = tries + 1, "
        "last_error = NULL WHERE id = ? AND state = ?",
        (PrintState.PRINTED.value, at, job_id, PrintState.QUEUED.value),
    )


def mark_print_failed(conn: Connection, job_id: int, error: str) -> None:
    """A try that did not print (`error`: why, as `Said.to_json` stores it); the slip stays
    queued."""
    conn.execute(
        "UPDATE print_job SET tries = tries + 1, last_error = ? WHERE id = ?", (error, job_id)
    )


def mark_print_dropped(conn: Connection, job_id: int, error: str) -> None:
    """A slip that can never print: out of the queue, kept with why."""
    conn.execute(
        "UPDATE print_job SET state = ?, last_error = ? WHERE id = ? AND state = ?",
        (PrintState.DROPPED.value, error, job_id, PrintState.QUEUED.value),
    )


def print_counts(conn: Connection) -> dict[PrintState, int]:
    """How many slips are in each state (a state with none is left out)."""
    rows = conn.execute("SELECT state, COUNT(*) FROM print_job GROUP BY state").fetchall()
    return {_state(state): int(n) for state, n in rows}


def print_jobs(conn: Connection, limit: int = 50) -> list[dict[str, Any]]:
    """The latest slips, newest first (`qrpos print queue`, tests)."""
    rows = conn.execute(
        "SELECT id, created_at, kind, ref, reprint, state, tries, last_error, printed_at "
        "FROM print_job ORDER BY id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    names = ("id", "created_at", "kind", "ref", "reprint", "state", "tries", "last_error")
    jobs = [dict(zip((*names, "printed_at"), row, strict=True)) for row in rows]
    return [{**job, "state": _state(job["state"])} for job in jobs]
