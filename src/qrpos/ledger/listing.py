"""The outbox's rows as callers see them: `SaleResult` and the `outbox list` rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from qrpos.ledger import records
from qrpos.ledger.records import IntentRow, ReversalRow
from qrpos.ledger.states import ReversalState
from qrpos.ledger.store import Ledger
from qrpos.ledger.views import IntentView, SaleResult
from qrpos.service import Transaction
from qrpos.service.models import transaction_from_json_text


def sale_result(row: IntentRow) -> SaleResult:
    """The caller's view of an intent row."""
    tx: Transaction | None = None
    if row.tx_json:
        tx = transaction_from_json_text(row.tx_json)
    return SaleResult(
        intent_id=row.id,
        state=row.state,
        amount_mnt=row.amount_mnt,
        transaction=tx,
        decline_code=row.decline_code,
        message=row.last_detail,
        charged=None if row.charged is None else bool(row.charged),
    )


def intent_view(row: IntentRow) -> IntentView:
    """A charge intent as a row of `qrpos outbox list`."""
    return IntentView(
        id=str(row.id),
        kind="charge",
        amount_mnt=row.amount_mnt,
        state=str(row.state),
        charged=None if row.charged is None else bool(row.charged),
        transaction_id=row.tx_id,
        token=row.token_tail,
        created_at=datetime.fromtimestamp(row.created_at, UTC),
        detail=row.last_detail,
        attempts=row.attempts,
    )


def reversal_view(row: ReversalRow) -> IntentView:
    """A reversal as a row of `qrpos outbox list` (id prefixed `r`)."""
    return IntentView(
        id=f"r{row.id}",
        kind="reversal",
        amount_mnt=row.amount_mnt,
        state=str(row.state),
        charged=False if row.state is ReversalState.REFUNDED else None,
        transaction_id=row.tx_id,
        token=None,
        created_at=datetime.fromtimestamp(row.created_at, UTC),
        detail=row.message,
        attempts=row.attempts,
    )


def outbox_views(ledger: Ledger, *, include_final: bool) -> list[IntentView]:
    """Sales and refunds in the outbox, oldest first; needs no client or password."""

    def read(conn: Any) -> list[IntentView]:
        views = [intent_view(r) for r in records.list_intents(conn, include_final=include_final)]
        views += [
            reversal_view(r) for r in records.list_reversals(conn, include_final=include_final)
        ]
        return sorted(views, key=lambda v: v.created_at)

    return ledger.read(read)
