"""Issue 47: for any order of sales, outcomes and Zs, the Zs' figures with their
corrections are the books (the ledger's own money of every sale, `money.money_of`):
kept charges as `sales`, charges refunded since as `reversed`. Real SQLite file; the
sales move through the store's legal moves (`sales_sql.update_intent`)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrpos.ledger import Ledger, refunds_sql, sales_sql, shifts_sql
from qrpos.ledger.money import Money, money_of
from qrpos.ledger.shifts import add_cashier, current_shift, open_shift, take_z, z_reports
from qrpos.ledger.states import IntentState as S
from qrpos.ledger.states import ReversalState
from qrpos.manager_pin import pin_record

AT = datetime(2026, 11, 24, 1, 0, tzinfo=UTC)

#: each step: (state, charged, what happens to its refund: None, "queue", "land", "refuse")
PATHS: list[list[tuple[S, int | None, str | None]]] = [
    [(S.APPROVED, 1, None)],
    [(S.APPROVED, 1, None), (S.APPROVED, 1, "queue"), (S.APPROVED, 1, "land")],
    [(S.DECLINED, 0, None)],
    [(S.UNRESOLVED, None, None), (S.NOT_CHARGED, 0, None)],
    [(S.UNRESOLVED, None, None), (S.CHARGED_PER_HISTORY, 1, None)],
    [
        (S.UNRESOLVED, None, None),
        (S.ABANDONED, None, None),
        (S.ABANDONED, 1, "queue"),
        (S.REVERSED_AFTER_ABANDON, 1, "land"),
    ],
    [
        (S.UNRESOLVED, None, None),
        (S.ABANDONED, None, None),
        (S.ABANDONED, 1, "queue"),
        (S.NEEDS_REVIEW, 1, "refuse"),
        (S.CHARGED_PER_REVIEW, 1, None),
    ],
    [(S.UNRESOLVED, None, None), (S.NEEDS_REVIEW, None, None), (S.NOT_CHARGED, 0, None)],
    [
        (S.UNRESOLVED, None, None),
        (S.NEEDS_REVIEW, None, None),
        (S.REFUNDED_PER_REVIEW, 1, "queue"),
        (S.REFUNDED_PER_REVIEW, 1, "land"),
    ],
    [(S.UNRESOLVED, None, None), (S.ABANDONED, None, None), (S.ABANDONED, 0, None)],
]

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("sale"), st.integers(0, len(PATHS) - 1), st.integers(100, 50_000)),
        st.tuples(st.just("move"), st.integers(0, 10_000), st.just(0)),
        st.tuples(st.just("z"), st.just(0), st.just(0)),
    ),
    max_size=40,
)


def _step(ledger: Ledger, intent: int, tx: str, amount: int, step: Any) -> None:
    state, charged, refund = step

    def write(conn: Any) -> None:
        changes: dict[str, Any] = {"charged": charged}
        now = sales_sql.get_intent(conn, intent)
        if now is not None and now.state is not state:  # (a state stays by its silence)
            changes["state"] = state
        if charged == 1:
            changes["tx_id"] = tx
        sales_sql.update_intent(conn, intent, **changes)
        if refund == "queue":
            refunds_sql.insert_reversal(
                conn, tx_id=tx, reason="abandoned", now=0.0, intent_id=intent, amount_mnt=amount
            )
        elif refund in ("land", "refuse"):
            new = ReversalState.REFUNDED if refund == "land" else ReversalState.REFUSED
            [row] = [r for r in refunds_sql_rows(conn) if r[1] == tx]
            refunds_sql.update_reversal(conn, int(row[0]), state=new)

    ledger.write(write)


def refunds_sql_rows(conn: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute("SELECT id, tx_id FROM reversal").fetchall()]


def _insert(c: sqlite3.Connection, *, n: int, amount: int) -> int:
    """Sale number `n` of the story, stored as the till would store it."""
    return sales_sql.insert_intent(
        c, idem_key=f"k{n}", token=f"tok{n:04d}", amount_mnt=amount, now=AT.timestamp()
    )


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_the_zs_with_their_corrections_are_the_books(
    steps: list[tuple[str, int, int]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    ledger = Ledger.open(tmp_path_factory.mktemp("zs") / "outbox.sqlite3")
    try:
        bat = add_cashier(ledger, "Bat", pin_record("1357", cashier=True), at=AT)
        open_shift(ledger, bat, at=AT)
        sales: list[tuple[int, str, int, int]] = []  # (intent, tx, amount, path), progress
        progress: dict[int, int] = {}
        for kind, a, b in steps:
            if kind == "sale":
                n = len(sales)
                intent = ledger.write(partial(_insert, n=n, amount=b))
                sales.append((intent, f"tx_{n}", b, a))
                progress[intent] = 0
                _step(ledger, intent, f"tx_{n}", b, PATHS[a][0])
            elif kind == "move" and sales:
                intent, tx, amount, path = sales[a % len(sales)]
                if progress[intent] + 1 < len(PATHS[path]):
                    progress[intent] += 1
                    _step(ledger, intent, tx, amount, PATHS[path][progress[intent]])
            elif kind == "z":
                shift = current_shift(ledger)
                assert shift is not None
                take_z(ledger, shift, at=AT, by="cashier")
                open_shift(ledger, bat, at=AT)
        taken_before = z_reports(ledger)
        shift = current_shift(ledger)
        assert shift is not None
        take_z(ledger, shift, at=AT, by="cashier")
        reports = z_reports(ledger)
        assert reports[:-1] == taken_before  # no Z ever changes

        def books(conn: Any) -> dict[Money, int]:
            rows = shifts_sql.intents_by_id(conn, [s[0] for s in sales])
            refunded = shifts_sql.refunded_tx_ids(conn, [r.tx_id for r in rows if r.tx_id])
            out = dict.fromkeys(Money, 0)
            for r in rows:
                out[money_of(r.state, r.charged, r.tx_id in refunded)] += r.amount_mnt
            return out

        truth = ledger.read(books)
        fixes = [c for r in reports for c in r["corrections"]]
        kept = sum(r["sales_mnt"] for r in reports) + sum(c["sales_mnt"] for c in fixes)
        gone = sum(r["reversed_mnt"] for r in reports) + sum(c["reversed_mnt"] for c in fixes)
        assert (kept, gone) == (truth[Money.CHARGED], truth[Money.REFUNDED])
        # and each sale's money moved is corrected once: a Z now would correct nothing
        shift = current_shift(ledger)
        assert shift is None
        again = take_z(ledger, open_shift(ledger, bat, at=AT), at=AT, by="cashier")
        assert again.z_report is not None and again.z_report["corrections"] == []
    finally:
        ledger.close()
