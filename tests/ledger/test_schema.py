"""The outbox's schema is held by a committed snapshot (`schema_snapshot.sql`): the
migrations replayed from an empty file must give exactly it, and so must every older file
migrated forward. A migration that changes the schema without a new snapshot fails here,
and so does a snapshot edited without the migration that makes it.

After a deliberate change of the schema, write the new snapshot with
`.venv/bin/python tests/ledger/test_schema.py > tests/ledger/schema_snapshot.sql`
and review its diff: it is the schema change a kiosk's file will go through.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

import pytest

from qrpos.ledger import Ledger
from qrpos.ledger.migrations import MIGRATIONS, SCHEMA_VERSION

SNAPSHOT = Path(__file__).with_name("schema_snapshot.sql")


def _normalized(sql: str) -> str:
    """One statement as stored, with the indentation and blank lines of its source gone
    (they are layout, not schema); its words, comments and line breaks are kept."""
    lines = (re.sub(r"\s+", " ", line).strip() for line in sql.splitlines())
    return "\n".join(line for line in lines if line)


def schema_of(conn: sqlite3.Connection) -> str:
    """The file's schema as the snapshot holds it: `user_version`, then every table, index,
    trigger and view SQLite keeps (its own internal ones left out), by kind and name."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master"
        " WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    parts = [f"-- user_version {version}"]
    for kind, name, table, sql in rows:
        parts.append(f"-- {kind} {name} on {table}\n{_normalized(str(sql))};")
    return "\n\n".join(parts) + "\n"


def _schema_of_file(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return schema_of(conn)
    finally:
        conn.close()


def _replayed_schema(tmp: Path) -> str:
    ledger = Ledger.open(tmp / "replayed.sqlite3")
    ledger.close()
    return _schema_of_file(tmp / "replayed.sqlite3")


def test_the_migrations_replayed_from_an_empty_file_give_the_snapshot(tmp_path: Path) -> None:
    replayed = _replayed_schema(tmp_path)
    assert replayed.startswith(f"-- user_version {SCHEMA_VERSION}\n")
    assert "-- table charge_intent on charge_intent" in replayed  # the walk saw the tables
    assert replayed == SNAPSHOT.read_text(encoding="utf-8"), (
        "the schema the migrations build is not the committed snapshot: if the change is "
        "meant, write it with `python tests/ledger/test_schema.py > "
        "tests/ledger/schema_snapshot.sql` and review the diff"
    )


def test_a_changed_schema_is_seen_by_the_snapshot(tmp_path: Path) -> None:
    """The comparison is not blind: one column more, or an index dropped, changes it."""
    path = tmp_path / "changed.sqlite3"
    Ledger.open(path).close()
    before = _schema_of_file(path)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE charge_intent ADD COLUMN newer_note TEXT")
    conn.commit()
    conn.close()
    assert _schema_of_file(path) != before


@pytest.mark.parametrize("version", range(SCHEMA_VERSION))
def test_a_file_of_an_older_version_migrates_to_the_snapshot(tmp_path: Path, version: int) -> None:
    """A kiosk's file written by an older qrpos (no such files are kept in the repository:
    each is built here from the migrations of its day) opens to the current schema."""
    path = tmp_path / f"version{version}.sqlite3"
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:version]:
        conn.executescript(script)
    # user_version cannot be bound as a parameter; it is our own integer
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    assert _schema_of_file(path).startswith(f"-- user_version {version}\n")
    ledger = Ledger.open(path)
    assert ledger.integrity_ok
    ledger.close()
    assert _schema_of_file(path) == SNAPSHOT.read_text(encoding="utf-8")


if __name__ == "__main__":  # write the snapshot of the schema the migrations build now
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        sys.stdout.write(_replayed_schema(Path(tmp)))
