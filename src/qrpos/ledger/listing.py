"""What a reader of the outbox sees without a client or a password: the `outbox list` rows
and the service's clock as this kiosk measured it."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from qrpos.ledger import refunds_sql, sales_sql, service_sql
from qrpos.ledger.failures import LedgerError
from qrpos.ledger.store import Ledger
from qrpos.ledger.views import (
    AttemptView,
    IntentView,
    UnknownIntent,
    intent_view,
    reversal_view,
)
from qrpos.said import say


def outbox_views(ledger: Ledger, *, include_final: bool) -> list[IntentView]:
    """Sales and refunds in the outbox, oldest first; needs no client or password."""

    def read(conn: Any) -> list[IntentView]:
        views = [intent_view(r) for r in sales_sql.list_intents(conn, include_final=include_final)]
        views += [
            reversal_view(r) for r in refunds_sql.list_reversals(conn, include_final=include_final)
        ]
        return sorted(views, key=lambda v: v.created_at)

    return ledger.read(read)


def _no_such(item: str) -> UnknownIntent:
    return UnknownIntent(
        say(
            "error.no_item",
            "no sale or refund {item} in the outbox (see qrpos outbox list --all)",
            item=item,
        )
    )


def outbox_audit(ledger: Ledger, item: str) -> tuple[IntentView, list[AttemptView]]:
    """One sale ("12") or refund ("r3") as `outbox list` shows it, and its audit trail,
    oldest first; needs no client or password. `UnknownIntent` when there is no such one."""
    refund = item.startswith("r")
    number = item[1:] if refund else item
    # ASCII digits only ("²" and "١٢" are digits to str.isdigit), and few enough of them
    # for SQLite's 64-bit integer
    if not (number.isascii() and number.isdigit() and len(number) <= 18):
        raise _no_such(item)
    key = int(number)

    def read(conn: Any) -> tuple[IntentView, list[AttemptView]] | None:
        if refund:
            reversal = refunds_sql.get_reversal(conn, key)
            if reversal is None:
                return None
            view, rows = reversal_view(reversal), service_sql.attempts_of(conn, reversal_id=key)
        else:
            intent = sales_sql.get_intent(conn, key)
            if intent is None:
                return None
            view, rows = intent_view(intent), service_sql.attempts_of(conn, key)
        return view, [AttemptView.from_row(r) for r in rows]

    found = ledger.read(read)
    if found is None:
        raise _no_such(item)
    return found


#: how often `ServiceClock` reads the measured offset from the outbox again
SERVICE_CLOCK_REREAD_S = 30.0


class ServiceClock:
    """The service's clock as this kiosk measured it (`Date` of its replies), read from
    the outbox at most every `SERVICE_CLOCK_REREAD_S`; the kiosk's own clock until it has
    been measured, or when the outbox cannot be read."""

    def __init__(self, ledger: Ledger, local: Callable[[], datetime]) -> None:
        self._ledger = ledger
        self._local = local
        self._checked_at: float | None = None
        self._offset_s = 0.0

    def now(self) -> datetime:
        """The service's "now" (aware UTC)."""
        if self._checked_at is None or time.monotonic() - self._checked_at > SERVICE_CLOCK_REREAD_S:
            try:
                reading = self._ledger.read(service_sql.read_clock)
            except LedgerError:
                reading = None  # a closed or broken outbox: the kiosk's own clock
            self._offset_s = reading.offset_s if reading is not None else 0.0
            self._checked_at = time.monotonic()
        return self._local() + timedelta(seconds=self._offset_s)
