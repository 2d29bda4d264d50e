"""Optional persistence of the sandbox's state in a SQLite file (``--db PATH``).

The sandbox keeps its working state in memory; with a file, every change is also
written through as one JSON row per record, and the file is read back at start.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL,
    id   TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (kind, id)
)
"""


def _db_id(record_id: str) -> str | bytes:
    """The id as SQLite keeps it: TEXT when it is valid Unicode, else (a key or token with
    lone surrogates, i.e. bytes that were not UTF-8) its ``surrogatepass`` bytes as a BLOB,
    which SQLite never takes as equal to any TEXT."""
    try:
        record_id.encode("utf-8")
    except UnicodeEncodeError:
        return record_id.encode("utf-8", "surrogatepass")
    return record_id


class Store:
    """Write-through record store; the base class keeps nothing (memory-only sandbox)."""

    def put(self, kind: str, record_id: str, data: dict[str, Any]) -> None:
        """Insert or replace one record."""

    def delete(self, kind: str, record_id: str) -> None:
        """Forget one record."""

    def load(self, kind: str) -> Iterator[dict[str, Any]]:
        """Every stored record of a kind."""
        return iter(())

    def close(self) -> None:
        """Release the file."""


class SqliteStore(Store):
    """Records in a SQLite file; the caller serialises access (the sandbox's lock)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Used from uvicorn's thread and the caller's, always under the sandbox lock.
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    def put(self, kind: str, record_id: str, data: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO records (kind, id, data) VALUES (?, ?, ?)",
            (kind, _db_id(record_id), json.dumps(data, separators=(",", ":"))),
        )

    def delete(self, kind: str, record_id: str) -> None:
        self._db.execute("DELETE FROM records WHERE kind = ? AND id = ?", (kind, _db_id(record_id)))

    def load(self, kind: str) -> Iterator[dict[str, Any]]:
        rows = self._db.execute("SELECT data FROM records WHERE kind = ?", (kind,)).fetchall()
        for (data,) in rows:
            yield json.loads(data)

    def close(self) -> None:
        self._db.close()
