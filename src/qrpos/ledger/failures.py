"""How the outbox fails, in words a person can act on: `LedgerError` (a full disk, a
read-only or missing state dir, a damaged file, a newer schema), `DamagedRow` (a stored
value that is not what its column holds) and `IllegalTransition` (a bug's move).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from qrpos.errors import QrposError
from qrpos.said import say

log = logging.getLogger("qrpos.ledger")


class LedgerError(QrposError):
    """The outbox cannot be read or written; the message says why and what to do.

    Raised for a full disk, a read-only or missing state dir, a corrupt file, or a
    database written by a newer qrpos. Nothing already stored is changed by the failure.
    """


class DamagedRow(LedgerError):
    """A stored value is not what its column holds (a state that is none, a time that is no
    number, JSON that does not parse): the file's bytes were damaged. Raised by the ledger's
    storage modules (`typed_rows`, a `*_sql` module, `reviews` reading a review's rows) as
    they decode a row; inside a read or a write the store
    reports it as a damaged outbox. Any other exception there is a bug, and is raised as
    itself."""


def one_line(exc: object, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: what SQLite's own reading of a damaged file raises besides `sqlite3.Error` (a schema
#: quoted back that is not UTF-8, say): caught only around SQLite's statements at open,
#: never around the ledger's code, where these are bugs (`DamagedRow` is the damage)
DAMAGED_DATA = (UnicodeDecodeError, ValueError, OverflowError, IndexError, KeyError, TypeError)


def damaged_outbox(exc: Exception, path: Path) -> LedgerError:
    log.error("outbox %s: a row cannot be read (%s)", path, type(exc).__name__)
    return LedgerError(
        say(
            "error.outbox_damaged",
            "the outbox {path} is damaged ({why}); it is kept as it is for inspection. "
            "No new charge is possible until it is repaired or moved aside",
            path=str(path),
            why=f"a row cannot be read: {one_line(exc)}",
        )
    )


def explained(error: sqlite3.Error, path: Path) -> LedgerError:
    # SQLite may quote a damaged schema verbatim: one line, bounded, for a person
    exc = one_line(error)
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


class IllegalTransition(QrposError, RuntimeError):
    """A bug tried a move the state machine forbids; the transaction is rolled back."""
