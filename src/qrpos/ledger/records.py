"""The outbox's rows as typed values, and the SQL that reads and changes them.

Every function takes the connection of the ledger's owner thread; writers are called
inside `Ledger.write` (one `BEGIN IMMEDIATE` transaction each).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from sqlite3 import Connection as Connection
from sqlite3 import Row
from typing import Any, Final, Unpack

from qrpos.errors import QrposError
from qrpos.ledger.clockreading import DATE_RESOLUTION_S, ClockReading, next_reading
from qrpos.ledger.states import OPEN_SQL as _OPEN_SQL
from qrpos.ledger.states import IntentChanges as IntentChanges
from qrpos.ledger.states import IntentRow as IntentRow
from qrpos.ledger.states import IntentState, ReversalState, can_move, can_move_reversal
from qrpos.ledger.states import Proof as Proof
from qrpos.ledger.states import ReversalChanges as ReversalChanges
from qrpos.ledger.states import ReversalRow as ReversalRow

# the rows' types live in states (pure); re-exported for the modules that read rows here
from qrpos.ledger.store import DamagedRow
from qrpos.redact import token_tail
from qrpos.said import Said
from qrpos.service import Transaction

#: "open" as SQL, written from its one definition (`states.is_open`)
OPEN_SQL: Final = _OPEN_SQL


class IllegalTransition(QrposError, RuntimeError):
    """A bug tried a move the state machine forbids; the transaction is rolled back."""


_INTENT_FIELDS = tuple(f.name for f in fields(IntentRow))
_REVERSAL_FIELDS = tuple(f.name for f in fields(ReversalRow))
_CLOCK_FIELDS = tuple(f.name for f in fields(ClockReading))
#: each field's declared type, which the stored value must have (`_checked`)
_INTENT_TYPES: dict[str, object] = {f.name: f.type for f in fields(IntentRow)}
_REVERSAL_TYPES: dict[str, object] = {f.name: f.type for f in fields(ReversalRow)}
_CLOCK_TYPES: dict[str, object] = {f.name: f.type for f in fields(ClockReading)}


def token_digest(token: str) -> str:
    """SHA-256 of the exact token: lets a rerun find its sale without keeping the token."""
    return hashlib.sha256(token.encode("utf-8", errors="surrogatepass")).hexdigest()


#: no stored number (a time, an offset, an uptime) is further from 0 than this: about
#: 1,900 years either side of 1970, which every date on a screen can still show
_LATEST_S = 60_000_000_000.0


def _checked(name: str, annotation: object, value: object) -> Any:
    """`value` as the column `name` (typed `annotation`) holds it, or `DamagedRow`."""
    kinds = str(annotation)
    if value is None:
        if "None" in kinds:
            return None
        raise DamagedRow(f"{name} is empty")
    for states in (IntentState, ReversalState):
        if states.__name__ in kinds:
            if not isinstance(value, str) or value not in {str(v) for v in states}:
                raise DamagedRow(f"{name} {str(value)[:20]!r} is not a state")
            return states(value)
    if "Proof" in kinds:
        if value not in ("reply", "history", "review"):
            raise DamagedRow(f"{name} {str(value)[:20]!r} is not a proof")
        return value
    if "bool" in kinds:
        if value not in (0, 1):
            raise DamagedRow(f"{name} is not a flag")
        return bool(value)
    if "float" in kinds:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DamagedRow(f"{name} is not a number")
        number = float(value)
        if not math.isfinite(number) or abs(number) > _LATEST_S:
            raise DamagedRow(f"{name} {number!r} is out of range")
        return number
    if "int" in kinds:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DamagedRow(f"{name} is not an integer")
        return value
    if "str" in kinds and not isinstance(value, str):
        raise DamagedRow(f"{name} is not text")
    return value


def _decoded(row: Row, names: tuple[str, ...], types: dict[str, object]) -> dict[str, Any]:
    try:
        return {name: _checked(name, types[name], row[name]) for name in names}
    except IndexError as exc:  # a column that is gone
        raise DamagedRow(str(exc)) from None


def _intent(row: Row) -> IntentRow:
    return IntentRow(**_decoded(row, _INTENT_FIELDS, _INTENT_TYPES))


def _reversal(row: Row) -> ReversalRow:
    return ReversalRow(**_decoded(row, _REVERSAL_FIELDS, _REVERSAL_TYPES))


def stored_json(text: str | None, what: str) -> Any:
    """Parse JSON the outbox stored; `DamagedRow` when it does not parse."""
    try:
        return json.loads(text or "")
    except (ValueError, TypeError) as exc:
        raise DamagedRow(f"{what} is not JSON ({exc})") from None


# --- charge intents ---------------------------------------------------------------------


def get_intent(conn: Connection, intent_id: int) -> IntentRow | None:
    """The intent with this id, or None."""
    row = conn.execute("SELECT * FROM charge_intent WHERE id = ?", (intent_id,)).fetchone()
    return None if row is None else _intent(row)


def open_intents(conn: Connection) -> list[IntentRow]:
    """Intents that block a new sale, oldest first."""
    sql = f"SELECT * FROM charge_intent WHERE {OPEN_SQL} ORDER BY id"  # noqa: S608 - constant
    rows = conn.execute(sql).fetchall()
    return [_intent(r) for r in rows]


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
    return None if row is None else _intent(row)


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
    return [_intent(r) for r in rows]


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
    return [_intent(r) for r in conn.execute(sql, params).fetchall()]


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


def _text(detail: Said | str | None) -> str | None:
    return None if detail is None else str(detail)


def _said_columns(changes: dict[str, Any], english: str, said: str) -> dict[str, Any]:
    """`changes` as columns: a last word (`Said`) is kept twice, as its English in
    `english` (logs, --json, older readers) and whole in `said` (any language)."""
    if english in changes:
        word = changes[english]
        if word is not None and not isinstance(word, Said):
            raise TypeError(f"{english} takes a Said, not {type(word).__name__}")
        changes[english] = None if word is None else word.english
        changes[said] = None if word is None else word.to_json()
    return changes


def update_intent(conn: Connection, intent_id: int, **changes: Unpack[IntentChanges]) -> IntentRow:
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
        columns = _said_columns(dict(changes), "last_detail", "detail_said")
        cols = ", ".join(f"{name} = ?" for name in columns)
        values = [str(v) if isinstance(v, IntentState) else v for v in columns.values()]
        # column names were checked against the dataclass above; values are parameters
        sql = f"UPDATE charge_intent SET {cols} WHERE id = ?"  # noqa: S608
        conn.execute(sql, (*values, intent_id))
    updated = get_intent(conn, intent_id)
    assert updated is not None
    return updated


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
            _text(detail),
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


# --- reversals --------------------------------------------------------------------------


def get_reversal(conn: Connection, reversal_id: int) -> ReversalRow | None:
    """The reversal with this id, or None."""
    row = conn.execute("SELECT * FROM reversal WHERE id = ?", (reversal_id,)).fetchone()
    return None if row is None else _reversal(row)


def reversal_for_tx(conn: Connection, tx_id: str) -> ReversalRow | None:
    """The latest reversal of a transaction, or None."""
    row = conn.execute(
        "SELECT * FROM reversal WHERE tx_id = ? ORDER BY id DESC LIMIT 1", (tx_id,)
    ).fetchone()
    return None if row is None else _reversal(row)


def open_reversals(conn: Connection) -> list[ReversalRow]:
    """Reversals still to be sent or retried, oldest first."""
    rows = conn.execute(
        "SELECT * FROM reversal WHERE state IN ('pending', 'credentials_rejected') ORDER BY id"
    ).fetchall()
    return [_reversal(r) for r in rows]


def list_reversals(conn: Connection, *, include_final: bool) -> list[ReversalRow]:
    """Reversals, oldest first: all, or only the open ones."""
    if not include_final:
        return open_reversals(conn)
    return [_reversal(r) for r in conn.execute("SELECT * FROM reversal ORDER BY id").fetchall()]


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


def update_reversal(
    conn: Connection, reversal_id: int, **changes: Unpack[ReversalChanges]
) -> ReversalRow:
    """Apply `changes` to one reversal; returns the new row."""
    unknown = set(changes) - set(_REVERSAL_FIELDS)
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
        columns = _said_columns(dict(changes), "message", "message_said")
        cols = ", ".join(f"{name} = ?" for name in columns)
        values = [str(v) if isinstance(v, ReversalState) else v for v in columns.values()]
        sql = f"UPDATE reversal SET {cols} WHERE id = ?"  # noqa: S608 - checked names
        conn.execute(sql, (*values, reversal_id))
    row = get_reversal(conn, reversal_id)
    assert row is not None
    return row


def amount_of_tx(conn: Connection, tx_id: str) -> int | None:
    """The amount of our own charge with this transaction id, when we have it."""
    row = conn.execute("SELECT amount_mnt FROM charge_intent WHERE tx_id = ?", (tx_id,)).fetchone()
    return None if row is None else int(row[0])


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
    return ClockReading(**_decoded(row, _CLOCK_FIELDS, _CLOCK_TYPES))


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


# --- reviews: the sales a person settles, and the rows each one holds ---------------------


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
    return [_intent(r) for r in rows.fetchall()]


def offered_rows(conn: Connection) -> dict[int, frozenset[str]]:
    """The rows each open review offers, by sale: held for that sale until a person
    settles it (no other sale is approved or refunded on one of them)."""
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


def neighbours(conn: Connection, lo: float, hi: float, tx_ids: Sequence[str]) -> list[IntentRow]:
    """Intents that could matter to a look-up: every unsettled one, those created between
    `lo` and `hi` (local time), and those that hold one of `tx_ids`."""
    marks = ", ".join("?" for _ in tx_ids) or "NULL"
    # the placeholders are ours; the values go through parameters
    where = f"charged IS NULL OR created_at BETWEEN ? AND ? OR tx_id IN ({marks})"
    sql = f"SELECT * FROM charge_intent WHERE {where} ORDER BY id"  # noqa: S608
    return [_intent(r) for r in conn.execute(sql, (lo, hi, *tx_ids)).fetchall()]


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
    return [_decoded(r, _ATTEMPT_FIELDS, _ATTEMPT_TYPES) for r in rows]


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
    until: float = _checked("suspect_until", "float", row[0])
    return datetime.fromtimestamp(until, UTC)


def uncleared_foreign(conn: Connection) -> list[tuple[str, float]]:
    """(transaction id, local time first seen) of every foreign row not yet cleared, oldest
    first: while there is one, another install's activity is a warning on screen."""
    rows = conn.execute(
        "SELECT tx_id, seen_at FROM foreign_row WHERE cleared_at IS NULL ORDER BY seen_at, tx_id"
    ).fetchall()
    return [(str(r[0]), _checked("seen_at", "float", r[1])) for r in rows]


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


# --- the receipt printer's queue -------------------------------------------------------


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
        "SELECT id, slip FROM print_job WHERE state = 'queued' ORDER BY id LIMIT 1"
    ).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def mark_printed(conn: Connection, job_id: int, at: float) -> None:
    """The printer took the slip whole: never sent again."""
    conn.execute(
        "UPDATE print_job SET state = 'printed', printed_at = ?, tries = tries + 1, "
        "last_error = NULL WHERE id = ? AND state = 'queued'",
        (at, job_id),
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
        "UPDATE print_job SET state = 'dropped', last_error = ? WHERE id = ? AND state = 'queued'",
        (error, job_id),
    )


def print_counts(conn: Connection) -> dict[str, int]:
    """How many slips are in each state."""
    rows = conn.execute("SELECT state, COUNT(*) FROM print_job GROUP BY state").fetchall()
    return {str(state): int(n) for state, n in rows}


def print_jobs(conn: Connection, limit: int = 50) -> list[dict[str, Any]]:
    """The latest slips, newest first (`qrpos print queue`, tests)."""
    rows = conn.execute(
        "SELECT id, created_at, kind, ref, reprint, state, tries, last_error, printed_at "
        "FROM print_job ORDER BY id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    names = ("id", "created_at", "kind", "ref", "reprint", "state", "tries", "last_error")
    return [dict(zip((*names, "printed_at"), row, strict=True)) for row in rows]


# --- cashiers and shifts ----------------------------------------------------------------

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
    return [_intent(r) for r in rows]


def intents_by_id(conn: Connection, intent_ids: Sequence[int]) -> list[IntentRow]:
    """The intents with these ids (the open sales an earlier Z named)."""
    if not intent_ids:
        return []
    marks = ", ".join("?" for _ in intent_ids)
    rows = conn.execute(
        f"SELECT * FROM charge_intent WHERE id IN ({marks}) ORDER BY id",  # noqa: S608
        tuple(intent_ids),
    ).fetchall()
    return [_intent(r) for r in rows]


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
    return [_reversal(r) for r in rows]
