"""The printer queue's states are one enum (`PrintState`) whose values are what the outbox
stores: the schema accepts exactly them, each has words in both catalogues, and the queue
hands them back as members, never as bare strings."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path

import pytest

import qrpos
from qrpos.ledger import Ledger, LedgerError
from qrpos.ledger.prints import (
    PrintState,
    next_slip,
    queue_slip,
    recent_slips,
    slip_counts,
    slip_dropped,
    slip_printed,
)

LOCALES = Path(qrpos.__file__).parent / "present" / "locales"


def _insert(conn: sqlite3.Connection, state: str) -> None:
    conn.execute(
        "INSERT INTO print_job (created_at, kind, ref, reprint, slip, state)"
        " VALUES (1, 'sale', ?, 1, '{}', ?)",
        (f"ref_{state}", state),
    )


def test_the_schema_accepts_exactly_the_enums_values(ledger: Ledger) -> None:
    for state in PrintState:

        def insert(conn: sqlite3.Connection, value: str = str(state)) -> None:
            _insert(conn, value)

        ledger.write(insert)
    assert slip_counts(ledger) == dict.fromkeys(PrintState, 1)
    with pytest.raises(LedgerError):
        ledger.write(lambda c: _insert(c, "lost"))


@pytest.mark.parametrize("language", ["en", "mn"])
def test_every_state_has_words_in_both_catalogues(language: str) -> None:
    words = tomllib.loads((LOCALES / language / "cli.toml").read_text(encoding="utf-8"))
    said = words["cli"]["print"]["state"]
    assert set(said) == {str(s) for s in PrintState}
    assert all(said.values())


def test_the_queue_moves_a_slip_and_names_its_state_as_a_member(ledger: Ledger) -> None:
    first = queue_slip(ledger, "sale", "tx_a", "{}", reprint=False, at=1.0)
    second = queue_slip(ledger, "sale", "tx_b", "{}", reprint=False, at=2.0)
    assert first is not None and second is not None
    assert slip_counts(ledger) == {PrintState.QUEUED: 2}
    job = next_slip(ledger)
    assert job is not None and job.id == first
    slip_printed(ledger, first, at=3.0)
    slip_dropped(ledger, second, '"unreadable"')
    slip_dropped(ledger, first, '"too late"')  # printed stays printed
    counts = slip_counts(ledger)
    assert counts == {PrintState.PRINTED: 1, PrintState.DROPPED: 1}
    assert all(type(state) is PrintState for state in counts)
    assert next_slip(ledger) is None
    states = {job["ref"]: job["state"] for job in recent_slips(ledger)}
    assert states == {"tx_a": PrintState.PRINTED, "tx_b": PrintState.DROPPED}
    assert all(type(state) is PrintState for state in states.values())


def test_a_state_that_is_none_is_a_damaged_outbox_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "outbox.sqlite3"
    Ledger.open(path).close()
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA ignore_check_constraints = ON")  # what damaged bytes could hold
    with raw:
        _insert(raw, "lost")
    raw.close()
    ledger = Ledger.open(path)
    try:
        with pytest.raises(LedgerError, match="damaged"):
            slip_counts(ledger)
        with pytest.raises(LedgerError, match="damaged"):
            recent_slips(ledger)
    finally:
        ledger.close()
