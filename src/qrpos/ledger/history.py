"""Finding an unclear charge in the terminal's history, never by guessing.

A candidate is a CHARGE of exactly the intent's amount, created inside the window
[first send − skew − margin, last request end (or send + settle) + skew + margin], and
not already claimed by another intent. The list is scoped to this terminal by the
service. Exactly one candidate resolves the intent; two or more go to a person.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime

from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.records import IntentRow
from qrpos.service import ListingFailed, TerminalClient, Transaction
from qrpos.service.outcomes import ListOutcome

#: the server's `Date` header has a resolution of one second
DATE_RESOLUTION_S = 1.0


@dataclass(frozen=True)
class Window:
    """The span of server time in which our charge, if any, was committed."""

    start: datetime
    end: datetime


@dataclass(frozen=True)
class Lookup:
    """What one look at the history found: candidates, or the failed listing."""

    candidates: tuple[Transaction, ...]
    failure: ListOutcome | None = None


def window_for(row: IntentRow, policy: RetryPolicy) -> Window:
    """The window for an intent, shifted by the measured clock skew (server − local)."""
    first = row.first_sent_at if row.first_sent_at is not None else row.created_at
    last_sent = row.last_sent_at if row.last_sent_at is not None else first
    last_end = max(row.last_end_at or last_sent, last_sent + policy.settle_s)
    skew = row.clock_skew_s or 0.0
    margin = policy.window_margin_s + DATE_RESOLUTION_S
    return Window(
        start=datetime.fromtimestamp(first + skew - margin, UTC),
        end=datetime.fromtimestamp(last_end + skew + margin, UTC),
    )


def matches(tx: Transaction, row: IntentRow, window: Window, claimed: Collection[str]) -> bool:
    """True when `tx` could be this intent's charge."""
    return (
        tx.is_charge
        and tx.amount_mnt == row.amount_mnt
        and window.start <= tx.created_at <= window.end
        and tx.id not in claimed
    )


async def look_up(
    client: TerminalClient, row: IntentRow, policy: RetryPolicy, claimed: Collection[str]
) -> Lookup:
    """List the window's transactions and return the candidates for `row`."""
    window = window_for(row, policy)
    found: list[Transaction] = []
    try:
        async for tx in client.iter_transactions(from_=window.start, limit=1000):
            if tx.created_at < window.start:
                break
            if matches(tx, row, window, claimed):
                found.append(tx)
    except ListingFailed as exc:
        return Lookup(candidates=(), failure=exc.outcome)
    return Lookup(candidates=tuple(found))
