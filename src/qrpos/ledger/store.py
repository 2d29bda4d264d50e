"""The outbox database: one SQLite file, one owner thread, durable writes.

Rules (docs/architecture.md, "SQLite rules"): WAL, `synchronous=FULL`, `BEGIN IMMEDIATE` for every
write, a busy timeout, `PRAGMA quick_check` at open, the schema version in
`user_version` with forward migrations (`qrpos.ledger.migrations`). One thread owns the
connection; async callers reach it through `aread`/`awrite`, so SQLite never blocks the event
loop. How it fails, in words a person can act on, is `qrpos.ledger.failures`.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from qrpos.ledger.failures import (
    DAMAGED_DATA,
    DamagedRow,
    LedgerError,
    damaged_outbox,
    explained,
    one_line,
)
from qrpos.ledger.migrations import MIGRATIONS, SCHEMA_VERSION
from qrpos.said import os_reason, say

log = logging.getLogger("qrpos.ledger")

T = TypeVar("T")

BUSY_TIMEOUT_MS = 5000


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
            raise explained(exc, path) from None
        except DAMAGED_DATA as exc:  # SQLite quoting a damaged schema that is not UTF-8
            executor.shutdown(wait=False)
            raise damaged_outbox(exc, path) from None
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
        except (sqlite3.DatabaseError, *DAMAGED_DATA) as exc:
            rows = [(f"unreadable: {exc}",)]
        found = one_line("; ".join(str(r[0]) for r in rows[:5]))
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
            raise explained(exc, self.path) from None
        except DAMAGED_DATA as exc:
            raise damaged_outbox(exc, self.path) from None

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
            raise explained(exc, self.path) from None
        except DamagedRow as exc:
            raise damaged_outbox(exc, self.path) from None

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
                raise explained(exc, self.path) from None
            if isinstance(exc, DamagedRow):
                raise damaged_outbox(exc, self.path) from None
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
    except DAMAGED_DATA:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code not in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
            conn.close()
            raise
        # a damaged file: keep the connection so quick_check can report it
    return conn
