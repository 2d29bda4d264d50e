"""The outbox's rows as typed values: each stored value checked against what its
column holds (`DamagedRow` when it is not), shared by the SQL modules of each subject
(`sales_sql`, `refunds_sql`, `reviews_sql`, `service_sql`, `prints_sql`, `shifts_sql`).

The ledger's other modules get `Connection` from here: they hand it to those modules and
never import sqlite3 themselves.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields
from sqlite3 import Connection as Connection
from sqlite3 import Row
from typing import Any

from qrpos.ledger.failures import DamagedRow
from qrpos.ledger.states import IntentRow, IntentState, ReversalRow, ReversalState
from qrpos.said import Said

INTENT_FIELDS = tuple(f.name for f in fields(IntentRow))
REVERSAL_FIELDS = tuple(f.name for f in fields(ReversalRow))
#: each field's declared type, which the stored value must have (`checked`)
INTENT_TYPES: dict[str, object] = {f.name: f.type for f in fields(IntentRow)}
REVERSAL_TYPES: dict[str, object] = {f.name: f.type for f in fields(ReversalRow)}


#: no stored number (a time, an offset, an uptime) is further from 0 than this: about
#: 1,900 years either side of 1970, which every date on a screen can still show
_LATEST_S = 60_000_000_000.0


def checked(name: str, annotation: object, value: object) -> Any:
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


def decoded(row: Row, names: tuple[str, ...], types: dict[str, object]) -> dict[str, Any]:
    try:
        return {name: checked(name, types[name], row[name]) for name in names}
    except IndexError as exc:  # a column that is gone
        raise DamagedRow(str(exc)) from None


def intent_row(row: Row) -> IntentRow:
    return IntentRow(**decoded(row, INTENT_FIELDS, INTENT_TYPES))


def reversal_row(row: Row) -> ReversalRow:
    return ReversalRow(**decoded(row, REVERSAL_FIELDS, REVERSAL_TYPES))


def stored_json(text: str | None, what: str) -> Any:
    """Parse JSON the outbox stored; `DamagedRow` when it does not parse."""
    try:
        return json.loads(text or "")
    except (ValueError, TypeError) as exc:
        raise DamagedRow(f"{what} is not JSON ({exc})") from None


def said_text(detail: Said | str | None) -> str | None:
    return None if detail is None else str(detail)


def said_columns(changes: dict[str, Any], english: str, said: str) -> dict[str, Any]:
    """`changes` as columns: a last word (`Said`) is kept twice, as its English in
    `english` (logs, --json, older readers) and whole in `said` (any language)."""
    if english in changes:
        word = changes[english]
        if word is not None and not isinstance(word, Said):
            raise TypeError(f"{english} takes a Said, not {type(word).__name__}")
        changes[english] = None if word is None else word.english
        changes[said] = None if word is None else word.to_json()
    return changes
