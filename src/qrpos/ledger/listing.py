"""What a reader of the outbox sees without a client or a password: the `outbox list` rows,
the service's clock as this kiosk measured it, and the desk's read-only views
(`OutboxListing`)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from qrpos.ledger import refunds_sql, sales_sql, service_sql, shifts_sql
from qrpos.ledger.failures import LedgerError
from qrpos.ledger.review_reads import (
    ForeignActivity,
    ReviewView,
    foreign_activity,
    open_reviews,
)
from qrpos.ledger.states import IntentRow
from qrpos.ledger.store import Ledger
from qrpos.ledger.views import (
    AttemptView,
    IntentView,
    ReversalResult,
    SaleResult,
    UnknownIntent,
    intent_view,
    reversal_view,
    sale_result,
)
from qrpos.said import say

log = logging.getLogger("qrpos.ledger")


def charge_views(conn: Any, rows: Sequence[IntentRow]) -> list[IntentView]:
    """Sales as `qrpos outbox list` shows them, each with where its money stands (`money`:
    the landed refunds of their rows read once for all), for the list and the metrics."""
    refunded = shifts_sql.refunded_tx_ids(conn, [r.tx_id for r in rows if r.tx_id])
    return [intent_view(r, r.tx_id in refunded) for r in rows]


def refunded_here(ledger: Ledger, tx_ids: Sequence[str]) -> set[str]:
    """Which of these history rows a refund of this outbox gave back, the service
    confirming it (204, or 409 "already reversed"): what a stale copy of the history (the
    cache, read offline) does not know yet. Needs no client or password."""
    ids = list(dict.fromkeys(tx_ids))
    return ledger.read(lambda conn: shifts_sql.refunded_tx_ids(conn, ids)) if ids else set()


async def result_of(ledger: Ledger, row: IntentRow) -> SaleResult:
    """The caller's view of `row` (`sale_result`), with whether a refund of its row landed
    (a sale approved, then refunded by hand, is "charged, then refunded": `.money`)."""
    tx_id = row.tx_id
    if tx_id is None:
        return sale_result(row)
    try:
        landed = await ledger.aread(lambda c: shifts_sql.refunded_tx_ids(c, [tx_id]))
    except LedgerError as exc:
        # the sale is committed as it stands; a read that fails after it (the outbox
        # closing at shutdown, an I/O error) must not turn a paid sale into an error at
        # the till: its row's refund, if any, is read again by every list
        log.warning("sale #%d: its row's refunds could not be read: %s", row.id, exc)
        return sale_result(row)
    return sale_result(row, refunded=tx_id in landed)


def outbox_views(ledger: Ledger, *, include_final: bool) -> list[IntentView]:
    """Sales and refunds in the outbox, oldest first; needs no client or password."""

    def read(conn: Any) -> list[IntentView]:
        views = charge_views(conn, sales_sql.list_intents(conn, include_final=include_final))
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
            [view], rows = charge_views(conn, [intent]), service_sql.attempts_of(conn, key)
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


#: how far the kiosk's clock may have been from the service's at a sale for the sale still
#: to be placed in its day by its row's time: a Pi without a battery clock boots on the
#: time it saved at shutdown (`fake-hwclock`), days behind after a week switched off, until
#: NTP steps it; the service keeps 30 days of history by default
PLACEMENT_REACH = timedelta(days=31)


class OutboxListing:
    """The outbox as a reader sees it through the desk (`ChargeDesk.listing`): the sales and
    refunds, the reviews, another install's activity, a refund's standing, the audit trail
    and the service's clock. It only reads; the kiosk's commands are `ChargeDesk`'s."""

    def __init__(self, ledger: Ledger, local: Callable[[], datetime]) -> None:
        self.ledger = ledger
        self._service_clock = ServiceClock(ledger, local)

    def unresolved(self) -> list[IntentView]:
        """Sales and refunds that need attention (open, needs_review, watched, queued)."""
        return self.intents(include_final=False)

    def intents(self, include_final: bool) -> list[IntentView]:
        """Every sale and refund in the outbox (or only those needing attention)."""
        return outbox_views(self.ledger, include_final=include_final)

    def charges_between(self, from_utc: datetime, to_utc: datetime) -> list[IntentView]:
        """Sales of [from_utc, to_utc), all states, for reconciliation, placed by the
        service's time of their row where the service answered with it (a sale made while
        the kiosk's clock was a day behind is in its real day: review 7), else by the
        kiosk's clock. Each names the pairing it went out under (`username`)."""
        reach = PLACEMENT_REACH.total_seconds()

        def read(conn: Any) -> list[IntentRow]:
            return sales_sql.intents_placed_between(
                conn, from_utc.timestamp(), to_utc.timestamp(), reach
            )

        out = []
        for row in self.ledger.read(read):
            view = intent_view(row)
            if from_utc <= (view.service_at or view.created_at) < to_utc:
                out.append(view)
        return out

    def audit(self, intent_id: int) -> list[dict[str, Any]]:
        """Every attempt and lookup recorded for one sale, oldest first."""
        rows = self.ledger.read(lambda c: service_sql.attempts_of(c, intent_id))
        return [json.loads(json.dumps(r)) for r in rows]

    def reviews(self) -> list[ReviewView]:
        """Sales waiting for a person, with the history rows that could be their charge."""
        return self.ledger.read(open_reviews)

    def foreign_activity(self) -> ForeignActivity | None:
        """Another install charging with these credentials (until an owner clears it)."""
        return self.ledger.read(foreign_activity)

    def refunded_here(self, tx_ids: Sequence[str]) -> set[str]:
        """Which of these rows a landed refund of this outbox gave back (`refunded_here`)."""
        return refunded_here(self.ledger, tx_ids)

    def refund_of(self, tx_id: str) -> ReversalResult | None:
        """Where the latest refund of `tx_id` through the queue stands, or None."""
        rev = self.ledger.read(lambda c: refunds_sql.reversal_for_tx(c, tx_id))
        if rev is None:
            return None
        return ReversalResult.from_row(rev)

    def service_now(self) -> datetime:
        """The service's clock, as this kiosk last measured it from the `Date` of its
        replies (this kiosk's own clock until it has been measured): see
        `ServiceClock`. History windows and the VAT follow-up's schedule use it."""
        return self._service_clock.now()
