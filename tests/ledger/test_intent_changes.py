"""`IntentChanges` (the typed keyword arguments of every transition) mirrors `IntentRow`:
Python cannot derive one from the other, so this keeps them from drifting apart."""

from __future__ import annotations

import dataclasses
import typing

from qrpos.ledger import records

#: set once at insert, never changed by a move
FIXED = {"id", "idem_key", "token_sha256", "token_tail", "amount_mnt", "created_at"}


def test_every_changeable_column_has_the_rows_type_and_every_column_is_covered() -> None:
    changes = typing.get_type_hints(records.IntentChanges)
    row = typing.get_type_hints(records.IntentRow)
    assert changes.keys() <= row.keys()
    assert {name: row[name] for name in changes} == changes
    fields = {f.name for f in dataclasses.fields(records.IntentRow)}
    assert fields - changes.keys() == FIXED
