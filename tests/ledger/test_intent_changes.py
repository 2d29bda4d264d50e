"""`IntentChanges` (the typed keyword arguments of every transition) mirrors `IntentRow`:
Python cannot derive one from the other, so this keeps them from drifting apart."""

from __future__ import annotations

import dataclasses
import typing

from qrpos.ledger import states
from qrpos.said import Said

#: set once at insert, never changed by a move
FIXED = {"id", "idem_key", "token_sha256", "token_tail", "amount_mnt", "created_at"}
#: a move gives the last word as a `Said`; `sales_sql.update_intent` keeps it in two columns,
#: its English in `last_detail` and the whole of it in `detail_said`
SAID = {"last_detail": "detail_said"}


def test_every_changeable_column_has_the_rows_type_and_every_column_is_covered() -> None:
    changes = typing.get_type_hints(states.IntentChanges)
    row = typing.get_type_hints(states.IntentRow)
    assert changes.keys() <= row.keys()
    plain = {name: kind for name, kind in changes.items() if name not in SAID}
    assert {name: row[name] for name in plain} == plain
    assert {name: changes[name] for name in SAID} == dict.fromkeys(SAID, Said | None)
    assert {name: row[name] for name in SAID} == dict.fromkeys(SAID, str | None)
    fields = {f.name for f in dataclasses.fields(states.IntentRow)}
    assert fields - changes.keys() == FIXED | set(SAID.values())
