"""The outbox's rows as typed values: each stored value checked against what its
column holds (`DamagedRow` when it is not), shared by the SQL modules of each subject
(`sales_sql`, `refunds_sql`, `reviews_sql`, `service_sql`, `prints_sql`, `shifts_sql`).

The ledger's other modules get `Connection` from here: they hand it to those modules and
never import sqlite3 themselves.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
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
    return _checker(str(annotation))(name, value)


#: each state enum's stored values (a set built once, not on every row read)
_STATE_VALUES = {
    states: frozenset(str(v) for v in states) for states in (IntentState, ReversalState)
}


@functools.cache
def _checker(kinds: str) -> Callable[[str, object], Any]:
    """The check for one declared type, built once per type: rows are read on every move
    of every sale (the till simulator spent a sixth of its time re-reading annotations)."""
    optional = "None" in kinds

    def empty(name: str) -> Any:
        if optional:
            return None
        raise DamagedRow(f"{name} is empty")

    for states, allowed in _STATE_VALUES.items():
        if states.__name__ in kinds:

            def state(
                name: str, value: object, states: Any = states, allowed: Any = allowed
            ) -> Any:
                if value is None:
                    return empty(name)
                if not isinstance(value, str) or value not in allowed:
                    raise DamagedRow(f"{name} {str(value)[:20]!r} is not a state")
                return states(value)

            return state
    if "Proof" in kinds:

        def proof(name: str, value: object) -> Any:
            if value is None:
                return empty(name)
            if value not in ("reply", "history", "review"):
                raise DamagedRow(f"{name} {str(value)[:20]!r} is not a proof")
            return value

        return proof
    if "bool" in kinds:

        def flag(name: str, value: object) -> Any:
            if value is None:
                return empty(name)
            if value not in (0, 1):
                raise DamagedRow(f"{name} is not a flag")
            return bool(value)

        return flag
    if "float" in kinds:

        def number(name: str, value: object) -> Any:
            if value is None:
                return empty(name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise DamagedRow(f"{name} is not a number")
            figure = float(value)
            if not math.isfinite(figure) or abs(figure) > _LATEST_S:
                raise DamagedRow(f"{name} {figure!r} is out of range")
            return figure

        return number
    if "int" in kinds:

        def integer(name: str, value: object) -> Any:
            if value is None:
                return empty(name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise DamagedRow(f"{name} is not an integer")
            return value

        return integer
    text = "str" in kinds

    def other(name: str, value: object) -> Any:
        if value is None:
            return empty(name)
        if text and not isinstance(value, str):
            raise DamagedRow(f"{name} is not text")
        return value

    return other


#: each (columns, types) pair's checks, kept with the types dict they were built from
_PLANS: dict[tuple[tuple[str, ...], int], tuple[object, tuple[tuple[str, Any], ...]]] = {}


def _plan(names: tuple[str, ...], types: dict[str, object]) -> tuple[tuple[str, Any], ...]:
    key = (names, id(types))
    held = _PLANS.get(key)
    if held is None or held[0] is not types:
        held = (types, tuple((name, _checker(str(types[name]))) for name in names))
        _PLANS[key] = held
    return held[1]


def decoded(row: Row, names: tuple[str, ...], types: dict[str, object]) -> dict[str, Any]:
    try:
        return {name: check(name, row[name]) for name, check in _plan(names, types)}
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
