"""The claims model on its own: proof only when a row is unique in both directions, and
foreign rows only when no pairing of rows to sales can account for them."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from qrpos.ledger.claims import (
    Claimant,
    Disputed,
    NoCandidate,
    Proven,
    Window,
    foreign_rows,
    judge,
)
from qrpos.service import Transaction, parse_transaction

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def row(n: int, amount: int, at_s: int, status: str = "COMPLETED") -> Transaction:
    return parse_transaction(
        {
            "id": f"tx_{n:08d}",
            "amountMNT": amount,
            "status": status,
            "type": "CHARGE",
            "vatReceiptID": "",
            "vatStatus": "pending",
            "createdAt": (T0 + timedelta(seconds=at_s)).isoformat().replace("+00:00", "Z"),
        }
    )


def claimant(i: int, amount: int, start_s: int, length_s: int) -> Claimant:
    window = Window(T0 + timedelta(seconds=start_s), T0 + timedelta(seconds=start_s + length_s))
    return Claimant(i, amount, window)


rows_st = st.lists(st.tuples(st.sampled_from((100, 200)), st.integers(0, 60)), max_size=5).map(
    lambda xs: [row(n, a, t) for n, (a, t) in enumerate(xs)]
)
claimants_st = st.lists(
    st.tuples(st.sampled_from((100, 200)), st.integers(0, 50), st.integers(1, 20)), max_size=4
).map(lambda xs: [claimant(i, a, s, d) for i, (a, s, d) in enumerate(xs, start=1)])


@settings(max_examples=200, deadline=None)
@given(rows=rows_st, claimants=claimants_st)
def test_proof_only_when_the_row_is_unique_in_both_directions(
    rows: list[Transaction], claimants: list[Claimant]
) -> None:
    for me in claimants:
        others = [c for c in claimants if c is not me]
        verdict = judge(me, rows, others, owned=(), foreign_active=False, abandoned=False)
        mine = [tx for tx in rows if me.could_own(tx)]
        if isinstance(verdict, Proven):
            assert mine == [verdict.transaction]
            assert not any(c.could_own(verdict.transaction) for c in others)
        elif isinstance(verdict, NoCandidate):
            assert mine == []
        else:
            assert isinstance(verdict, Disputed) and mine
        with_foreign = judge(me, rows, others, owned=(), foreign_active=True, abandoned=False)
        assert not isinstance(with_foreign, Proven)


@settings(max_examples=200, deadline=None)
@given(rows=rows_st, claimants=claimants_st)
def test_foreign_rows_are_exactly_what_no_pairing_can_account_for(
    rows: list[Transaction], claimants: list[Claimant]
) -> None:
    strangers = foreign_rows(rows, claimants, known=())
    # brute force: the largest set of rows that distinct claimants could own
    best = 0
    for k in range(min(len(rows), len(claimants)), 0, -1):
        for chosen in itertools.combinations(rows, k):
            for owners in itertools.permutations(claimants, k):
                if all(c.could_own(tx) for c, tx in zip(owners, chosen, strict=True)):
                    best = k
                    break
            if best:
                break
        if best:
            break
    assert len(strangers) == len(rows) - best
    # a row no sale could own at all is always among them
    assert all(tx in strangers for tx in rows if not any(c.could_own(tx) for c in claimants))


def test_a_reversed_only_candidate_is_proof_for_an_abandoned_sale_only() -> None:
    me = claimant(1, 100, 0, 10)
    reversed_row = row(1, 100, 5, status="REVERSED")
    assert isinstance(
        judge(me, [reversed_row], [], owned=(), foreign_active=False, abandoned=False), Disputed
    )
    assert isinstance(
        judge(me, [reversed_row], [], owned=(), foreign_active=False, abandoned=True), Proven
    )


def test_a_row_owned_by_a_reply_is_never_a_candidate() -> None:
    me = claimant(1, 100, 0, 10)
    owned = row(1, 100, 5)
    verdict = judge(me, [owned], [], owned={owned.id}, foreign_active=False, abandoned=False)
    assert isinstance(verdict, NoCandidate)
