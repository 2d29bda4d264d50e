"""The SQL of what the outbox keeps of its exchanges with the service: the log of every
send and look-up (`attempt`), the service's clock as measured and the terminal learned per
pairing (`server_clock`), and the rows another install charged (`foreign_row`).

Every function takes the connection of the ledger's owner thread; writers are called
inside `Ledger.write` (one `BEGIN IMMEDIATE` transaction each).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from sqlite3 import Connection
from typing import Any

from qrpos.ledger.clockreading import DATE_RESOLUTION_S, ClockReading, next_reading
from qrpos.ledger.failures import DamagedRow
from qrpos.ledger.typed_rows import checked, decoded, said_text
from qrpos.said import Said
from qrpos.service import Transaction

_CLOCK_FIELDS = tuple(f.name for f in fields(ClockReading))
_CLOCK_TYPES: dict[str, object] = {f.name: f.type for f in fields(ClockReading)}


# --- the log of every send and look-up ------------------------------------------------


def log_attempt(
    conn: Connection,
    *,
    kind: str,
    n: int,
    sent_at: float,
    outcome: str,
    intent_id: int | None = None,
    reversal_id: int | None = None,
    elapsed_s: float | None = None,
    status: int | None = None,
    detail: Said | str | None = None,
    server_date: float | None = None,
) -> None:
    """Append one line to the audit trail of attempts and lookups."""
    conn.execute(
        "INSERT INTO attempt (intent_id, reversal_id, kind, n, sent_at, elapsed_s, status,"
        " outcome, detail, server_date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            intent_id,
            reversal_id,
            kind,
            n,
            sent_at,
            elapsed_s,
            status,
            outcome,
            said_text(detail),
            server_date,
        ),
    )


def log_exchange(
    conn: Connection,
    *,
    kind: str,
    n: int,
    sent_at: float,
    outcome: Any,
    intent_id: int | None = None,
    reversal_id: int | None = None,
    detail: Said | str | None = None,
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


#: the attempt table's columns and what each holds, checked as the rows' columns are
_ATTEMPT_TYPES: dict[str, object] = {
    "id": "int",
    "intent_id": "int | None",
    "reversal_id": "int | None",
    "kind": "str",
    "n": "int",
    "sent_at": "float",
    "elapsed_s": "float | None",
    "status": "int | None",
    "outcome": "str",
    "detail": "str | None",
    "server_date": "float | None",
}
_ATTEMPT_FIELDS = tuple(_ATTEMPT_TYPES)
_ATTEMPTS_OF = {
    "sale": "SELECT * FROM attempt WHERE intent_id = ? ORDER BY id",
    "refund": "SELECT * FROM attempt WHERE reversal_id = ? ORDER BY id",
}


def attempts_of(
    conn: Connection, intent_id: int | None = None, *, reversal_id: int | None = None
) -> list[dict[str, Any]]:
    """Every attempt and look-up recorded for one sale (or, given `reversal_id`, one
    refund), oldest first; `DamagedRow` for a value its column cannot hold."""
    query, key = (
        (_ATTEMPTS_OF["refund"], reversal_id)
        if reversal_id is not None
        else (_ATTEMPTS_OF["sale"], intent_id)
    )
    rows = conn.execute(query, (key,)).fetchall()
    return [decoded(r, _ATTEMPT_FIELDS, _ATTEMPT_TYPES) for r in rows]


# --- the service's clock and the terminal, as measured and learned ----------------------


def read_clock(conn: Connection) -> ClockReading | None:
    """The stored reading, or None when the server's clock was never measured."""
    row = conn.execute(
        "SELECT offset_s, measured_at, stable_since, jumped, previous_s, previous_since,"
        " high_s, high_at, high_date, boot, frame_s, stable_up, previous_up, previous_frame_s,"
        " back_mark FROM server_clock WHERE id = 1"
    ).fetchone()
    if row is None or row[0] is None:
        return None
    return ClockReading(**decoded(row, _CLOCK_FIELDS, _CLOCK_TYPES))


def observe(
    conn: Connection,
    offset_s: float,
    at: float,
    tolerance_s: float,
    boot: str | None = None,
    up: float | None = None,
) -> None:
    """Store a measurement of the service's clock taken at wall time `at` (boot clock `up`
    on `boot`, when known): `qrpos.ledger.clockreading.next_reading`."""
    new = next_reading(read_clock(conn), offset_s, at, tolerance_s, boot, up)
    conn.execute(
        "INSERT INTO server_clock (id, offset_s, measured_at, stable_since, jumped, previous_s,"
        " previous_since, high_s, high_at, high_date, boot, frame_s, stable_up, previous_up,"
        " previous_frame_s, back_mark) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET"
        " offset_s = excluded.offset_s, measured_at = excluded.measured_at,"
        " stable_since = excluded.stable_since, jumped = excluded.jumped,"
        " previous_s = excluded.previous_s, previous_since = excluded.previous_since,"
        " high_s = excluded.high_s, high_at = excluded.high_at,"
        " high_date = excluded.high_date, boot = excluded.boot, frame_s = excluded.frame_s,"
        " stable_up = excluded.stable_up, previous_up = excluded.previous_up,"
        " previous_frame_s = excluded.previous_frame_s, back_mark = excluded.back_mark",
        (
            new.offset_s,
            new.measured_at,
            new.stable_since,
            int(new.jumped),
            new.previous_s,
            new.previous_since,
            new.high_s,
            new.high_at,
            new.high_date,
            new.boot,
            new.frame_s,
            new.stable_up,
            new.previous_up,
            new.previous_frame_s,
            new.back_mark,
        ),
    )


def mark_stamps_ahead(conn: Connection, stamp: float) -> None:
    """The history showed a commit stamped at `stamp` (epoch seconds on the service's
    clock), ahead of the service's own `Date`: its clock went back and it stamps at its old
    high-water mark, which every window of a sale begun before it must reach
    (`windows.window_for`), the same as a mark seen by the `Date` going back."""
    conn.execute(
        "UPDATE server_clock SET back_mark = MAX(COALESCE(back_mark, ?), ?) WHERE id = 1",
        (stamp, stamp),
    )


def latest_service_time(
    conn: Connection, local: float, margin_s: float, unmeasured_s: float
) -> float:
    """The latest the service's clock (and its commit stamps) may read at local time
    `local`: the measured offset, or the high-water offset its stamps may still be at, plus
    `margin_s` and the `Date`'s second; never measured: `unmeasured_s` ahead of `local`."""
    reading = read_clock(conn)
    if reading is None:
        return local + unmeasured_s + margin_s
    now = local + reading.offset_s
    top = now if reading.high_date is None else max(now, reading.high_date)
    return top + margin_s + DATE_RESOLUTION_S


def terminal_id(conn: Connection, username: str | None) -> str | None:
    """The `ter_` id of the terminal paired as `username`, once the history or a verified
    reply has shown it. A new pairing is a new terminal: the id learned under another
    username (or before usernames were kept) is not this one's."""
    row = conn.execute(
        "SELECT terminal_id, terminal_user FROM server_clock WHERE id = 1"
    ).fetchone()
    if row is None or row[0] is None:
        return None
    if username is not None and row[1] != username:
        return None
    return str(row[0])


def learn_terminal_id(conn: Connection, value: str | None, username: str | None) -> None:
    """Remember the id of the terminal paired as `username` (the history is scoped to it by
    the service); the first one seen for a pairing is kept, a new pairing replaces it."""
    if not value or terminal_id(conn, username) is not None:
        return
    conn.execute(
        "INSERT INTO server_clock (id, terminal_id, terminal_user) VALUES (1, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET terminal_id = excluded.terminal_id,"
        " terminal_user = excluded.terminal_user",
        (value, username),
    )


# --- rows another install charged ---------------------------------------------------------


def record_foreign(
    conn: Connection,
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


def foreign_ids(conn: Connection, tx_ids: Sequence[str]) -> set[str]:
    """Which of these rows were seen as another install's (a cleared warning included)."""
    if not tx_ids:
        return set()
    marks = ", ".join("?" for _ in tx_ids)
    # the placeholders are ours; the ids go through parameters
    sql = f"SELECT tx_id FROM foreign_row WHERE surplus = 0 AND tx_id IN ({marks})"  # noqa: S608
    return {str(r[0]) for r in conn.execute(sql, tuple(tx_ids)).fetchall()}


def foreign_suspect_until(conn: Connection) -> datetime | None:
    """Up to when (service time) a row may be another install's charge that this kiosk
    never saw: the latest cleared warning's moment, or None when none was ever cleared."""
    row = conn.execute("SELECT MAX(suspect_until) FROM foreign_row").fetchone()
    if row is None or row[0] is None:
        return None
    until: float = checked("suspect_until", "float", row[0])
    return datetime.fromtimestamp(until, UTC)


def uncleared_foreign(conn: Connection) -> list[tuple[str, float]]:
    """(transaction id, local time first seen) of every foreign row not yet cleared, oldest
    first: while there is one, another install's activity is a warning on screen."""
    rows = conn.execute(
        "SELECT tx_id, seen_at FROM foreign_row WHERE cleared_at IS NULL ORDER BY seen_at, tx_id"
    ).fetchall()
    return [(str(r[0]), checked("seen_at", "float", r[1])) for r in rows]


def clear_foreign(
    conn: Connection, now: float, suspect_until: float, margin_s: float = 0.0
) -> None:
    """An owner cleared the warning (after rotating the password, say).

    The other install may have charged up to the moment it was re-paired, and not every
    one of its rows lay in a window this kiosk looked at: rows committed up to
    `suspect_until` (the service's clock at the clear, with margin) stay doubtful, so they
    go to a person rather than prove a sale (`foreign_suspect_until`). Never earlier than
    the latest stranger's row being cleared (plus `margin_s`): after the service's clock
    stepped back it stamps every commit at its high-water mark, ahead of any `Date` this
    kiosk saw, and the other install's rows lie there, with the kiosk's own.
    """
    stamps = []
    for (created,) in conn.execute("SELECT created_at FROM foreign_row WHERE cleared_at IS NULL"):
        try:
            stamps.append(datetime.fromisoformat(str(created)).timestamp())
        except ValueError:
            raise DamagedRow(f"a stranger's row has no time ({str(created)[:20]!r})") from None
    until = max([suspect_until, *(s + margin_s for s in stamps)])
    conn.execute(
        "UPDATE foreign_row SET cleared_at = ?, suspect_until = ? WHERE cleared_at IS NULL",
        (now, until),
    )
    log_attempt(
        conn, kind="foreign", n=1, sent_at=now, outcome="cleared", detail="cleared by an owner"
    )
