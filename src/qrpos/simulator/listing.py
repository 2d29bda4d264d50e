"""Reading the list's query (`from`, `to`, `limit`, `cursor`) into a window, or its 400.

Every value is checked by shape before it is converted, so no input, however long or
odd, reaches a conversion that can raise (Python's int-string digit limit, `datetime`'s
year range): the answer is the window or one of the spec's 400 texts, never a 500.
A parameter sent empty (``?limit=``) counts as absent, as for `from` and `to`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from qrpos import spec
from qrpos.simulator import model
from qrpos.simulator.model import Reply
from qrpos.simulator.timestamps import Instant, parse_instant

_LIMIT_MAX_DIGITS = len(str(spec.LIST_LIMIT_MAX))
_DEFAULT_WINDOW_US = int(spec.LIST_DEFAULT_WINDOW.total_seconds()) * 1_000_000


@dataclass(frozen=True)
class ListQuery:
    """A validated list request: rows with ``lo_us <= created_us <= hi_us``, at most
    ``limit`` of them, strictly older than the keyset position ``after`` if given."""

    lo_us: int
    hi_us: int
    limit: int
    after: tuple[int, str] | None


def parse_limit(raw: str) -> int | None:
    """`limit` as a positive decimal integer of ASCII digits (leading zeros allowed),
    clamped to the spec's maximum; None when it is not one (sign, space, other digits)."""
    if not (raw.isascii() and raw.isdigit()):
        return None
    digits = raw.lstrip("0")
    if not digits:
        return None
    if len(digits) > _LIMIT_MAX_DIGITS:  # larger than any allowed value: clamp, never int()
        return spec.LIST_LIMIT_MAX
    return min(int(digits), spec.LIST_LIMIT_MAX)


def parse_list_query(query: Mapping[str, str], now_us: int) -> ListQuery | Reply:
    """The window of ``GET /v1/transactions`` for this query at `now_us`, or its 400."""
    start = Instant.from_micros(now_us - _DEFAULT_WINDOW_US)
    end = Instant.from_micros(now_us)
    if raw := query.get("from"):
        parsed = parse_instant(raw)
        if parsed is None:
            return Reply.error(400, spec.ErrorText.INVALID_FROM)
        start = parsed
    if raw := query.get("to"):
        parsed = parse_instant(raw)
        if parsed is None:
            return Reply.error(400, spec.ErrorText.INVALID_TO)
        end = parsed
    if end < start:  # exact, at the precision the caller wrote
        return Reply.error(400, spec.ErrorText.FROM_AFTER_TO)
    limit = spec.LIST_LIMIT_DEFAULT
    if raw := query.get("limit"):
        parsed_limit = parse_limit(raw)
        if parsed_limit is None:
            return Reply.error(400, spec.ErrorText.INVALID_LIMIT)
        limit = parsed_limit
    after = None
    if raw := query.get("cursor"):
        after = model.decode_cursor(raw)
        if after is None:
            return Reply.error(400, model.INVALID_CURSOR_TEXT)
    return ListQuery(start.ceil_micros(), end.floor_micros(), limit, after)
