"""The claims model on its own: proof only when a row is unique in both directions, and
foreign rows only when no pairing of rows to sales can account for them."""

from __future__ import annotations

import dataclasses
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


def linked(me: Claimant, rows: list[Transaction], claimants: list[Claimant]) -> list[Transaction]:
    """The rows reachable from `me` through "could own" (by brute force, for the oracle)."""
    people, found = {me.intent_id}, []
    for _ in range(len(rows) + len(claimants) + 1):
        found = [
            tx for tx in rows if any(c.could_own(tx) for c in claimants if c.intent_id in people)
        ]
        people |= {c.intent_id for c in claimants if any(c.could_own(tx) for tx in found)}
    return found


def pairings(rows: list[Transaction], claimants: list[Claimant]) -> list[dict[str, int]]:
    """Every way to give each row its own sale that could own it (row id -> intent id)."""
    found: list[dict[str, int]] = []
    for owners in itertools.permutations(claimants, len(rows)):
        if all(c.could_own(tx) for c, tx in zip(owners, rows, strict=True)):
            found.append({tx.id: c.intent_id for tx, c in zip(rows, owners, strict=True)})
    return found


@settings(max_examples=300, deadline=None)
@given(rows=rows_st, claimants=claimants_st)
def test_charged_exactly_when_every_pairing_gives_the_sale_a_row(
    rows: list[Transaction], claimants: list[Claimant]
) -> None:
    """Review the outcome, not the pairing: the oracle enumerates every pairing."""
    for me in claimants:
        others = [c for c in claimants if c is not me]
        verdict = judge(me, rows, others, owned=(), foreign_active=False, abandoned=False)
        mine = [tx for tx in rows if me.could_own(tx)]
        ways = pairings(linked(me, rows, claimants), claimants)
        if isinstance(verdict, NoCandidate):
            assert mine == []
            continue
        assert mine
        charged_in_all = bool(ways) and all(me.intent_id in w.values() for w in ways)
        if isinstance(verdict, Proven):
            assert charged_in_all
            # its row is one that some pairing gives it
            assert any(w.get(verdict.transaction.id) == me.intent_id for w in ways)
        else:
            assert isinstance(verdict, Disputed)
            assert not charged_in_all or verdict.reason == "reversed_row"
        refund = judge(me, rows, others, owned=(), foreign_active=False, abandoned=True)
        if isinstance(refund, Proven):
            # a refund goes to one wallet: only on the row that is its in every pairing
            assert charged_in_all
            assert all(w.get(refund.transaction.id) == me.intent_id for w in ways)
        with_foreign = judge(me, rows, others, owned=(), foreign_active=True, abandoned=False)
        assert not isinstance(with_foreign, Proven)


def test_two_lost_replies_of_one_price_are_both_charged() -> None:
    """Two sales of one price, both replies lost, two rows: both certainly charged, though
    which row is whose is unknown; no person is asked which is which."""
    a, b = claimant(1, 500, 0, 30), claimant(2, 500, 0, 30)
    rows = [row(1, 500, 10), row(2, 500, 12)]
    first = judge(a, rows, [b], owned=(), foreign_active=False, abandoned=False)
    assert isinstance(first, Proven)
    held = Claimant(1, 500, a.window, holds=first.transaction.id)
    second = judge(b, rows, [held], owned=(), foreign_active=False, abandoned=False)
    assert isinstance(second, Proven) and second.transaction != first.transaction
    # but an abandoned one of them is not refunded on a guess: which wallet is unknown
    refund = judge(a, rows, [b], owned=(), foreign_active=False, abandoned=True)
    assert isinstance(refund, Disputed)


def test_a_row_explained_only_by_sales_in_review_is_not_taken_by_choice() -> None:
    """Found by the campaign: three rows of one price, this sale's reply lost, two earlier
    sales of that price in review whose windows reach the rows. Every pairing gives this
    sale a row, but which one was a choice; the person then said one of the two was not
    charged, and the row this sale had taken was a second install's, its own left unowned.
    A pairing that leans on a sale in review proves the charge of no particular row."""
    me = claimant(3, 500, 20, 30)
    in_review = [
        dataclasses.replace(claimant(i, 500, 0, 40), in_review=True, offered=frozenset())
        for i in (1, 2)
    ]
    rows = [row(1, 500, 25), row(2, 500, 26), row(3, 500, 27)]
    verdict = judge(me, rows, in_review, owned=(), foreign_active=False, abandoned=False)
    assert isinstance(verdict, Disputed) and verdict.reason == "ambiguous_history"
    # the same rows explained by open sales of this till (a canteen's set menu): charged
    open_ones = [claimant(i, 500, 0, 40) for i in (1, 2)]
    verdict = judge(me, rows, open_ones, owned=(), foreign_active=False, abandoned=False)
    assert isinstance(verdict, Proven)


def test_a_row_offered_by_a_review_is_held_for_it() -> None:
    """A 201 that did not match its sale put that sale in review with the row: a later
    same-price sale that may never have committed is not approved (nor refunded) on it."""
    held = Claimant(1, 900, claimant(1, 900, 0, 1).window, offered=frozenset({"tx_00000001"}))
    later = claimant(2, 500, 0, 60)
    rows = [row(1, 500, 20)]
    for abandoned in (False, True):
        verdict = judge(later, rows, [held], owned=(), foreign_active=False, abandoned=abandoned)
        assert isinstance(verdict, Disputed) and verdict.candidates[0].others == (1,)


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
