"""The last known history of this terminal, kept on disk so it can be shown offline.

A small SQLite file in the state dir (`history.sqlite3`), separate from the outbox: it
holds only what the service already said (a cache, rebuilt from the service at will),
plus the reversals whose VAT receipt is still being followed. Rows are stored as the
service's own JSON and re-parsed on the way out, so the cache cannot invent a field.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from qrpos.errors import QrposError
from qrpos.said import Said, say
from qrpos.service.models import (
    MalformedResponse,
    Transaction,
    decode_transaction,
    format_rfc3339,
    parse_rfc3339,
)

CACHE_FILE = "history.sqlite3"
_SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS tx (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    vat_status TEXT,
    wire TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tx_by_time ON tx (created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS followed (
    tx_id TEXT PRIMARY KEY,
    since TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class CacheError(QrposError):
    """The cache file cannot be used; the message says why (the kiosk works without)."""


@dataclass(frozen=True)
class CachedPage:
    """Rows from the cache, newest first; `before` continues after the last row."""

    transactions: tuple[Transaction, ...]
    before: tuple[str, str] | None


class HistoryCache:
    """Thread-safe (one connection, one lock): UI workers and pollers share it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > _SCHEMA_VERSION:
                raise CacheError(
                    say("cache.newer", "{path} was written by a newer qrpos", path=str(path))
                )
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise CacheError(
                say(
                    "cache.cannot_open",
                    "history cache {path} cannot be opened: {why}",
                    path=str(path),
                    why=Said.plain(str(exc)),
                )
            ) from None

    @classmethod
    def in_state_dir(cls, state_dir: Path) -> HistoryCache:
        """The cache at its usual place."""
        return cls(state_dir / CACHE_FILE)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- rows ---------------------------------------------------------------------------

    def store(self, rows: Iterable[Transaction], *, synced_at: datetime | None = None) -> int:
        """Insert or refresh rows (the service's latest word wins); returns how many."""
        data = [
            (
                tx.id,
                format_rfc3339(tx.created_at),
                tx.status.value,
                tx.vat_status.value if tx.vat_status else None,
                json.dumps(tx.to_json(), separators=(",", ":")),
            )
            for tx in rows
        ]
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    "INSERT INTO tx (id, created_at, status, vat_status, wire) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                    "status=excluded.status, vat_status=excluded.vat_status, "
                    "wire=excluded.wire",
                    data,
                )
                if synced_at is not None:
                    self._db.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('synced_at', ?)",
                        (format_rfc3339(synced_at),),
                    )
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise CacheError(
                    say(
                        "cache.failed",
                        "history cache {path}: {why}",
                        path=str(self.path),
                        why=Said.plain(str(exc)),
                    )
                ) from None
        return len(data)

    def page(
        self,
        *,
        from_utc: datetime | None = None,
        to_utc: datetime | None = None,
        before: tuple[str, str] | None = None,
        limit: int = 50,
    ) -> CachedPage:
        """Newest first within ``[from_utc, to_utc)``, after the key `before`."""
        where, args = [], []
        if from_utc is not None:
            where.append("created_at >= ?")
            args.append(format_rfc3339(from_utc))
        if to_utc is not None:
            where.append("created_at < ?")
            args.append(format_rfc3339(to_utc))
        if before is not None:
            where.append("(created_at, id) < (?, ?)")
            args.extend(before)
        sql = "SELECT created_at, id, wire FROM tx"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
        with self._lock:
            rows = self._db.execute(sql, (*args, limit + 1)).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        txs = tuple(t for t in (_parse(r[2]) for r in rows) if t is not None)
        after = (rows[-1][0], rows[-1][1]) if more and rows else None
        return CachedPage(transactions=txs, before=after)

    def get(self, tx_id: str) -> Transaction | None:
        """One cached row by id."""
        with self._lock:
            row = self._db.execute("SELECT wire FROM tx WHERE id = ?", (tx_id,)).fetchone()
        return _parse(row[0]) if row else None

    def pending_since(self, since: datetime) -> int:
        """Charges created at or after `since` whose VAT receipt is still pending."""
        with self._lock:
            row = self._db.execute(
                "SELECT count(*) FROM tx WHERE vat_status = 'pending' AND created_at >= ?",
                (format_rfc3339(since),),
            ).fetchone()
        return int(row[0])

    def charges_since(self, since: datetime) -> int:
        """Charges created at or after `since`, whatever their receipt: how busy the till
        is (the VAT follow-up polls less often while it sells)."""
        with self._lock:
            row = self._db.execute(
                "SELECT count(*) FROM tx WHERE created_at >= ?",
                (format_rfc3339(since),),
            ).fetchone()
        return int(row[0])

    def pending_created(self, since: datetime) -> list[datetime]:
        """Creation times (oldest first) of the charges since `since` whose receipt is
        pending: what the VAT follow-up plans its polls from."""
        with self._lock:
            rows = self._db.execute(
                "SELECT created_at FROM tx WHERE vat_status = 'pending' AND created_at >= ? "
                "ORDER BY created_at",
                (format_rfc3339(since),),
            ).fetchall()
        return [parse_rfc3339(r[0]) for r in rows]

    def synced_at(self) -> datetime | None:
        """When the cache last heard from the service (None: never)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'synced_at'").fetchone()
        return parse_rfc3339(row[0]) if row else None

    # --- reversals followed until their receipt is voided --------------------------------

    def follow(self, tx_id: str, since: datetime | None = None) -> None:
        """Watch this reversed charge's VAT status until it reads `voided`."""
        when = format_rfc3339(since or datetime.now(UTC))
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO followed VALUES (?, ?)", (tx_id, when))

    def unfollow(self, tx_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM followed WHERE tx_id = ?", (tx_id,))

    def followed(self) -> list[tuple[str, datetime]]:
        """(tx id, since when) of every reversal still being followed."""
        with self._lock:
            rows = self._db.execute("SELECT tx_id, since FROM followed ORDER BY since").fetchall()
        return [(r[0], parse_rfc3339(r[1])) for r in rows]


def _parse(wire: str) -> Transaction | None:
    try:
        return decode_transaction(wire, "cached transaction")
    except MalformedResponse:
        return None
