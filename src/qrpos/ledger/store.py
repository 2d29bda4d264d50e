"""The outbox database: one SQLite file, one owner thread, durable writes.

Rules (docs/architecture.md, "SQLite rules"): WAL, `synchronous=FULL`, `BEGIN IMMEDIATE` for every
write, a busy timeout, `PRAGMA quick_check` at open, the schema version in
`user_version` with forward migrations (`MIGRATIONS`, below: times are UTC seconds since
the epoch (REAL) so that windows are plain arithmetic; `datetime(x, 'unixepoch')` reads
them in the sqlite3 shell; rows are never deleted). One thread owns the connection; async callers
reach it through `arun`/`awrite`, so SQLite never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final, TypeVar

from qrpos.errors import QrposError
from qrpos.said import os_reason, say

#: migration N brings the schema from user_version N to N + 1
MIGRATIONS: Final[tuple[str, ...]] = (
    """
    CREATE TABLE charge_intent (
        id              INTEGER PRIMARY KEY,
        idem_key        TEXT    NOT NULL UNIQUE,
        -- the exact token while it may still be sent; cleared once the intent is final
        token           TEXT,
        token_sha256    TEXT    NOT NULL,
        token_tail      TEXT    NOT NULL,
        amount_mnt      INTEGER NOT NULL CHECK (amount_mnt > 0),
        state           TEXT    NOT NULL,
        -- 1 charged, 0 not charged, NULL not (yet) known
        charged         INTEGER,
        created_at      REAL    NOT NULL,
        first_sent_at   REAL,
        last_sent_at    REAL,
        last_end_at     REAL,
        attempts        INTEGER NOT NULL DEFAULT 0,
        -- 1 while a request is (or may be) in flight: a crash leaves it set
        in_flight       INTEGER NOT NULL DEFAULT 0,
        -- 1 once any attempt may have reached the service without a clear answer
        maybe_sent      INTEGER NOT NULL DEFAULT 0,
        -- 0 once re-sending stopped (409 after an unclear attempt, horizon, abandon)
        may_resend      INTEGER NOT NULL DEFAULT 1,
        next_try_at     REAL,
        clock_skew_s    REAL,
        last_status     INTEGER,
        last_detail     TEXT,
        decline_code    TEXT,
        -- the state to end in when the history shows nothing (declined/refused/not_charged)
        if_absent       TEXT,
        lookups         INTEGER NOT NULL DEFAULT 0,
        last_lookup_at  REAL,
        tx_id           TEXT UNIQUE,
        tx_json         TEXT,
        -- 1 while an abandoned intent's history is still being watched
        watching        INTEGER NOT NULL DEFAULT 0,
        resolved_at     REAL
    );
    CREATE INDEX charge_intent_state ON charge_intent (state);
    CREATE TABLE attempt (
        id          INTEGER PRIMARY KEY,
        intent_id   INTEGER,
        reversal_id INTEGER,
        kind        TEXT NOT NULL,          -- charge | lookup | reverse
        n           INTEGER NOT NULL,
        sent_at     REAL NOT NULL,
        elapsed_s   REAL,
        status      INTEGER,
        outcome     TEXT NOT NULL,
        detail      TEXT,
        server_date REAL
    );
    CREATE INDEX attempt_intent ON attempt (intent_id);
    CREATE TABLE reversal (
        id          INTEGER PRIMARY KEY,
        tx_id       TEXT NOT NULL,
        intent_id   INTEGER,
        amount_mnt  INTEGER,
        reason      TEXT NOT NULL,          -- manual | abandoned
        state       TEXT NOT NULL,
        created_at  REAL NOT NULL,
        attempts    INTEGER NOT NULL DEFAULT 0,
        next_try_at REAL,
        last_status INTEGER,
        message     TEXT,
        resolved_at REAL
    );
    CREATE INDEX reversal_tx ON reversal (tx_id);
    """,
    # 2: the claims model (ledger/claims.py): measured server clock, reviews, foreign rows
    """
    -- end of the last request that got no clear answer (none, timeout, 5xx): late commits
    -- of that request are waited for from here
    ALTER TABLE charge_intent ADD COLUMN last_unclear_end_at REAL;
    -- how the intent's transaction was proven: reply | history | review
    ALTER TABLE charge_intent ADD COLUMN proof TEXT;
    -- a look-up reads the intents near its window, and every unsettled one
    CREATE INDEX charge_intent_created ON charge_intent (created_at);
    CREATE INDEX charge_intent_charged ON charge_intent (charged);
    -- the server's clock as last measured from a response's Date (one row)
    CREATE TABLE server_clock (
        id           INTEGER PRIMARY KEY CHECK (id = 1),
        offset_s     REAL,              -- server − local, seconds; NULL: never measured
        measured_at  REAL,              -- local time of the measurement
        -- local time since which every measurement agreed with this offset (a jump resets it)
        stable_since REAL,
        -- 1 when stable_since was set by a jump (an earlier measurement disagreed)
        jumped       INTEGER NOT NULL DEFAULT 0,
        previous_s   REAL,              -- the offset before the last jump
        previous_since REAL,            -- since when that one had held
        terminal_id  TEXT               -- this terminal's ter_ id, once a verified reply showed it
    );
    -- an intent a person must settle, with the rows that could be its charge
    CREATE TABLE review (
        intent_id   INTEGER PRIMARY KEY,
        reason      TEXT NOT NULL,
        candidates  TEXT NOT NULL,      -- JSON [{"transaction": wire, "others": [ids]}]
        opened_at   REAL NOT NULL,
        decided_at  REAL,
        decision    TEXT,               -- charged | refund | not_charged
        decided_tx  TEXT,
        decided_by  TEXT
    );
    -- history rows no intent of this outbox could have sent: another install's charges
    CREATE TABLE foreign_row (
        tx_id       TEXT PRIMARY KEY,
        amount_mnt  INTEGER NOT NULL,
        created_at  TEXT NOT NULL,
        seen_at     REAL NOT NULL,
        intent_id   INTEGER,            -- the look-up that saw it
        cleared_at  REAL                -- an owner cleared the warning
    );
    """,
    # 3: every offset this intent's own exchanges measured (its window spans them all)
    """
    ALTER TABLE charge_intent ADD COLUMN skew_lo_s REAL;
    ALTER TABLE charge_intent ADD COLUMN skew_hi_s REAL;
    UPDATE charge_intent SET skew_lo_s = clock_skew_s, skew_hi_s = clock_skew_s;
    -- look-ups the service answered: each allows one more send with the same key
    ALTER TABLE charge_intent ADD COLUMN answered_lookups INTEGER NOT NULL DEFAULT 0;
    -- the highest offset the service's stamps may still be catching up with (states.next_reading)
    ALTER TABLE server_clock ADD COLUMN high_s REAL;
    ALTER TABLE server_clock ADD COLUMN high_at REAL;
    """,
    # 4: a new charge asks whether its token has already paid for a sale of this outbox
    """
    CREATE INDEX charge_intent_token ON charge_intent (token_sha256);
    """,
    # 5: when the last unclear request ended on a clock that NTP cannot step (this boot's
    # id and its CLOCK_BOOTTIME): late commits are waited for in real seconds
    """
    ALTER TABLE charge_intent ADD COLUMN unclear_end_boot TEXT;
    ALTER TABLE charge_intent ADD COLUMN unclear_end_up REAL;
    """,
    # 6: a cleared warning vouches only for rows committed after it: up to this moment of
    # the service's clock a row may still be the other install's (older clears: their
    # local time, the best there is); and a history match waits for one more same-key send
    """
    ALTER TABLE foreign_row ADD COLUMN suspect_until REAL;
    UPDATE foreign_row SET suspect_until = cleared_at WHERE cleared_at IS NOT NULL;
    -- a unique history match is confirmed by one more send of the key when it may be sent
    ALTER TABLE charge_intent ADD COLUMN matched_at REAL;
    """,
    # 7: a row left over only because some intent could own one of several rows is a
    # surplus: it raises the warning but stays a candidate (it may be this kiosk's own)
    """
    ALTER TABLE foreign_row ADD COLUMN surplus INTEGER NOT NULL DEFAULT 0;
    """,
    # 8: time for money in real seconds, and identity that follows the pairing
    """
    -- the first send's step-proof stamp (boot id, CLOCK_BOOTTIME): the resend horizon and
    -- the absence ceiling count real seconds from it (ledger/timing.py)
    ALTER TABLE charge_intent ADD COLUMN first_sent_boot TEXT;
    ALTER TABLE charge_intent ADD COLUMN first_sent_up REAL;
    -- the pairing (terminal username) the sale was sent under: a new pairing is a new
    -- terminal, whose key space and history the sale is not in
    ALTER TABLE charge_intent ADD COLUMN username TEXT;
    -- the username the learned terminal id belongs to (NULL: learned before this was kept)
    ALTER TABLE server_clock ADD COLUMN terminal_user TEXT;
    -- the latest the service's clock was ever seen at, on its own clock (a kiosk's clock
    -- stepped by NTP cannot move it): commits are stamped no earlier until it is passed
    ALTER TABLE server_clock ADD COLUMN high_date REAL;
    -- abandon no longer ends a review: a sale abandoned from review (its charge possibly
    -- real, owned by nothing, never refunded) is back in the review list
    UPDATE charge_intent SET state = 'needs_review'
     WHERE state = 'abandoned' AND watching = 0 AND charged IS NULL AND maybe_sent = 1;
    """,
    """
    -- a sale's and a refund's last word for a person, as `qrpos.said` keeps it (a JSON
    -- key, fields and English): shown in the configured language; the English columns
    -- beside them stay for logs, --json and older readers
    ALTER TABLE charge_intent ADD COLUMN detail_said TEXT;
    ALTER TABLE reversal ADD COLUMN message_said TEXT;
    """,
    # 10: the receipt printer's queue: a slip is kept until the printer took it whole, so a
    # printer that is off, out of paper or unplugged never loses one (nor blocks a sale)
    """
    CREATE TABLE print_job (
        id          INTEGER PRIMARY KEY,
        created_at  REAL NOT NULL,             -- UTC seconds, for people
        kind        TEXT NOT NULL,             -- sale | refund | end_of_day | test
        ref         TEXT NOT NULL,             -- the transaction id, the day
        reprint     INTEGER NOT NULL DEFAULT 0,
        slip        TEXT NOT NULL,             -- its lines (JSON), frozen when queued
        state       TEXT NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'printed', 'dropped')),
        tries       INTEGER NOT NULL DEFAULT 0,
        last_error  TEXT,                      -- why the last try failed (Said JSON)
        printed_at  REAL
    );
    CREATE INDEX print_job_queued ON print_job (state, id);
    -- a sale's own slip once: an approval told twice (a retry, a restart) queues no second
    CREATE UNIQUE INDEX print_job_slip_once ON print_job (kind, ref) WHERE reprint = 0;
    """,
    # 11: cashiers and their shifts: every sale and refund is stamped with the shift open
    # when it was written; a shift's Z report is frozen when it closes and never changes
    """
    CREATE TABLE cashier (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        pin         TEXT NOT NULL,             -- scrypt$n$r$p$salt$hash, never the PIN
        active      INTEGER NOT NULL DEFAULT 1,
        created_at  REAL NOT NULL
    );
    CREATE UNIQUE INDEX cashier_name ON cashier (name) WHERE active = 1;
    CREATE TABLE shift (
        id          INTEGER PRIMARY KEY,
        cashier_id  INTEGER NOT NULL REFERENCES cashier (id),
        opened_at   REAL NOT NULL,             -- UTC seconds: for people, the history's window
        closed_at   REAL,
        closed_by   TEXT CHECK (closed_by IN ('cashier', 'manager')),
        z_number    INTEGER UNIQUE,
        z_report    TEXT                       -- the Z as it was taken (JSON)
    );
    -- one shift open at a time on a till
    CREATE UNIQUE INDEX shift_one_open ON shift ((closed_at IS NULL)) WHERE closed_at IS NULL;
    -- a Z, once taken, never changes: a late outcome is a correction on the next one
    CREATE TRIGGER shift_z_frozen BEFORE UPDATE ON shift WHEN OLD.z_report IS NOT NULL
    BEGIN
        SELECT RAISE(ABORT, 'a Z report never changes');
    END;
    CREATE TRIGGER shift_z_kept BEFORE DELETE ON shift WHEN OLD.z_report IS NOT NULL
    BEGIN
        SELECT RAISE(ABORT, 'a Z report is kept');
    END;
    ALTER TABLE charge_intent ADD COLUMN shift_id INTEGER;
    ALTER TABLE reversal ADD COLUMN shift_id INTEGER;
    """,
    # 12: the server clock's reading keeps its stamps on the boot clock too, with the wall
    # clock's frame (wall − boot clock) they were measured in: after NTP stepped the wall
    # clock, a sale's window is placed with offsets moved into its own frame, never widened
    # by the step (a window hours wide let an open sale "explain" another's rows)
    """
    ALTER TABLE server_clock ADD COLUMN boot TEXT;
    ALTER TABLE server_clock ADD COLUMN frame_s REAL;
    ALTER TABLE server_clock ADD COLUMN stable_up REAL;
    ALTER TABLE server_clock ADD COLUMN previous_up REAL;
    ALTER TABLE server_clock ADD COLUMN previous_frame_s REAL;
    -- the highest mark the service's clock was seen to fall behind (its own clock): only
    -- then are commits stamped ahead of its clock, and only up to that mark. (Reaching the
    -- latest time ever seen instead stretched every sale's window to "now", so an open
    -- review of one price could own, and explain away, every later row of that price.)
    ALTER TABLE server_clock ADD COLUMN back_mark REAL;
    UPDATE server_clock SET back_mark = high_date
     WHERE high_date IS NOT NULL AND offset_s IS NOT NULL
       AND measured_at + offset_s < high_date - 5.0;
    """,
)

SCHEMA_VERSION: Final = len(MIGRATIONS)

log = logging.getLogger("qrpos.ledger")

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000


class LedgerError(QrposError):
    """The outbox cannot be read or written; the message says why and what to do.

    Raised for a full disk, a read-only or missing state dir, a corrupt file, or a
    database written by a newer qrpos. Nothing already stored is changed by the failure.
    """


class DamagedRow(LedgerError):
    """A stored value is not what its column holds (a state that is none, a time that is no
    number, JSON that does not parse): the file's bytes were damaged. Raised by the ledger's
    records (and views) as they decode a row; inside a read or a write the store reports it
    as a damaged outbox. Any other exception there is a bug, and is raised as itself."""


def _one_line(exc: object, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: what SQLite's own reading of a damaged file raises besides `sqlite3.Error` (a schema
#: quoted back that is not UTF-8, say): caught only around SQLite's statements at open,
#: never around the ledger's code, where these are bugs (`DamagedRow` is the damage)
_DAMAGED_DATA = (UnicodeDecodeError, ValueError, OverflowError, IndexError, KeyError, TypeError)


def _damaged(exc: Exception, path: Path) -> LedgerError:
    log.error("outbox %s: a row cannot be read (%s)", path, type(exc).__name__)
    return LedgerError(
        say(
            "error.outbox_damaged",
            "the outbox {path} is damaged ({why}); it is kept as it is for inspection. "
            "No new charge is possible until it is repaired or moved aside",
            path=str(path),
            why=f"a row cannot be read: {_one_line(exc)}",
        )
    )


def _explain(error: sqlite3.Error, path: Path) -> LedgerError:
    # SQLite may quote a damaged schema verbatim: one line, bounded, for a person
    exc = _one_line(error)
    code = getattr(error, "sqlite_errorcode", None)
    base = code & 0xFF if isinstance(code, int) else None
    where = str(path)
    if base == sqlite3.SQLITE_FULL:
        said = say(
            "error.outbox_full",
            "the disk holding the outbox {path} is full: nothing new can be stored "
            "(nothing stored was lost); free some space, then try again",
            path=where,
        )
    elif base == sqlite3.SQLITE_READONLY:
        said = say(
            "error.outbox_read_only",
            "the outbox {path} is read-only: nothing new can be stored (nothing stored "
            "was lost); make the state dir writable by the qrpos user",
            path=where,
        )
    elif base == sqlite3.SQLITE_CANTOPEN:
        said = say(
            "error.outbox_cannot_open",
            "cannot open the outbox {path}: the state dir is missing, read-only or not "
            "accessible to this user; fix its permissions (nothing stored was changed)",
            path=where,
        )
    elif base == sqlite3.SQLITE_BUSY:
        said = say(
            "error.outbox_locked",
            "the outbox {path} stays locked by another qrpos process; try again",
            path=where,
        )
    elif base in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        said = say(
            "error.outbox_damaged",
            "the outbox {path} is damaged ({why}); it is kept as it is for inspection. "
            "No new charge is possible until it is repaired or moved aside",
            path=where,
            why=exc,
        )
    elif base in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_PERM):
        said = say(
            "error.outbox_unwritable",
            "the outbox {path} cannot be written ({why}); check the disk and permissions",
            path=where,
            why=exc,
        )
    else:
        said = say("error.outbox_failed", "the outbox {path} failed: {why}", path=where, why=exc)
    return LedgerError(said)


class Ledger:
    """The outbox database. Build it with `Ledger.open(path)`; `close()` when done."""

    def __init__(self, path: Path, executor: ThreadPoolExecutor, conn: sqlite3.Connection) -> None:
        self.path = path
        self._executor = executor
        self._conn = conn
        #: False when `PRAGMA quick_check` failed at open: new charges are refused
        self.integrity_ok = True
        #: "ok", or what the check found
        self.integrity_message = "ok"
        self._closed = False

    # --- opening ---------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path) -> Ledger:
        """Open (creating if needed) the outbox at `path`, check it and migrate it.

        Raises `LedgerError` when the file cannot be opened or migrated. A failed
        integrity check does not raise: the ledger opens with `integrity_ok = False`
        so that screens can show what is wrong while charging is refused.
        """
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(
                say(
                    "error.state_dir",
                    "cannot create the state dir {path} ({why}); set QRPOS_STATE_DIR to a "
                    "writable directory",
                    path=str(path.parent),
                    why=os_reason(exc),
                )
            ) from None
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qrpos-ledger")
        try:
            conn = executor.submit(_connect, path).result()
        except sqlite3.Error as exc:
            executor.shutdown(wait=False)
            raise _explain(exc, path) from None
        except _DAMAGED_DATA as exc:  # SQLite quoting a damaged schema that is not UTF-8
            executor.shutdown(wait=False)
            raise _damaged(exc, path) from None
        ledger = cls(path, executor, conn)
        try:
            executor.submit(ledger._check_and_migrate).result()
        except BaseException:
            ledger.close()
            raise
        return ledger

    def _check_and_migrate(self) -> None:
        conn = self._conn
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        except (sqlite3.DatabaseError, *_DAMAGED_DATA) as exc:
            rows = [(f"unreadable: {exc}",)]
        found = _one_line("; ".join(str(r[0]) for r in rows[:5]))
        if found != "ok":
            self.integrity_ok = False
            self.integrity_message = (
                f"the outbox {self.path} failed its integrity check ({found}); it is kept "
                "as it is for inspection and no new charge is possible until it is repaired"
            )
            log.error("%s", self.integrity_message)
            return
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise LedgerError(
                    say(
                        "error.newer_outbox",
                        "the outbox {path} was written by a newer qrpos (schema {version} > "
                        "{known}); upgrade qrpos, the file is kept",
                        path=str(self.path),
                        version=version,
                        known=SCHEMA_VERSION,
                    )
                )
            for target in range(version, SCHEMA_VERSION):
                self._migrate(target)
        except sqlite3.Error as exc:
            raise _explain(exc, self.path) from None
        except _DAMAGED_DATA as exc:
            raise _damaged(exc, self.path) from None

    def _migrate(self, version: int) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(MIGRATIONS[version]):
                conn.execute(statement)
            # user_version cannot be bound as a parameter; it is our own integer
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        log.info("outbox %s migrated to schema %d", self.path, version + 1)

    def close(self) -> None:
        """Close the connection and stop the owner thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._executor.submit(self._conn.close).result()
        finally:
            self._executor.shutdown(wait=True)

    # --- access ----------------------------------------------------------------------

    def _guarded(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return fn(self._conn)
        except sqlite3.Error as exc:
            raise _explain(exc, self.path) from None
        except DamagedRow as exc:
            raise _damaged(exc, self.path) from None

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            result = fn(conn)
            conn.execute("COMMIT")
            return result
        except BaseException as exc:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    log.exception("rollback failed")
            if isinstance(exc, sqlite3.Error):
                raise _explain(exc, self.path) from None
            if isinstance(exc, DamagedRow):
                raise _damaged(exc, self.path) from None
            raise

    def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` on the owner thread and return its result (blocking)."""
        if self._closed:
            raise LedgerError(f"the outbox {self.path} is closed")
        return self._executor.submit(self._guarded, fn).result()

    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` inside `BEGIN IMMEDIATE … COMMIT` on the owner thread."""
        if self._closed:
            raise LedgerError(f"the outbox {self.path} is closed")
        return self._executor.submit(self._transaction, fn).result()

    async def aread(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`read` without blocking the event loop."""
        if self._closed:
            raise LedgerError(f"the outbox {self.path} is closed")
        return await asyncio.wrap_future(self._executor.submit(self._guarded, fn))

    async def awrite(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`write` without blocking the event loop."""
        if self._closed:
            raise LedgerError(f"the outbox {self.path} is closed")
        return await asyncio.wrap_future(self._executor.submit(self._transaction, fn))

    def integrity_check(self) -> str:
        """`PRAGMA integrity_check` (the full one): "ok" or what it found."""
        rows = self.read(lambda c: c.execute("PRAGMA integrity_check").fetchall())
        return "; ".join(str(r[0]) for r in rows[:5])


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (semicolons in comments are fine)."""
    out: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            out.append(pending.strip())
            pending = ""
    if pending.strip():
        out.append(pending.strip())
    return out


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves
    conn = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    conn.row_factory = sqlite3.Row
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            log.warning("outbox %s: journal_mode is %s, not wal", path, mode)
        conn.execute("PRAGMA synchronous = FULL")
    except _DAMAGED_DATA:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code not in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
            conn.close()
            raise
        # a damaged file: keep the connection so quick_check can report it
    return conn
