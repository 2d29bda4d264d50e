"""The table of moves, driven directly: no database, no service, no clock.

Every (state, event) cell of a sale and of a refund is walked (a missing one fails), and
hypothesis drives random event sequences through the table to check the ledger's rules:
charged only on proof, never "declined" when the truth is unknown, an abandoned sale proven
charged is refunded or reviewed (never silence), a refused refund opens a review.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from qrpos.ledger import moves
from qrpos.ledger.events import (
    Charged,
    Effect,
    IllegalMove,
    Move,
    RefundEvent,
    Refusal,
    ReviewReason,
    SaleEvent,
)
from qrpos.ledger.states import (
    CHARGED_STATES,
    OPEN_STATES,
    REVERSAL_TRANSITIONS,
    SOLD_STATES,
    TRANSITIONS,
    IntentState,
    ReversalState,
)

S, E = IntentState, SaleEvent

#: the events that prove a charge: a matching reply, the history, a person
PROOF = {
    E.REPLY_APPROVED,
    E.LOOKUP_PROVEN,
    E.LOOKUP_PROVEN_REFUNDED_ROW,
    E.DECIDE_CHARGED,
    E.DECIDE_REFUND,
}
#: the events that prove nothing was charged
ABSENCE = {
    E.REPLY_DECLINED,
    E.REPLY_REFUSED,
    E.REPLY_TOKEN_USED,
    E.REPLY_CREDENTIALS_REJECTED,
    E.LOOKUP_ABSENT,
    E.LOOKUP_ABSENT_AFTER_DECLINE,
    E.LOOKUP_ABSENT_AFTER_REFUSAL,
    E.NEVER_DELIVERED,
    E.DECIDE_NOT_CHARGED,
    E.ABANDON_CLEAN,
}
NOT_CHARGED_STATES = {S.DECLINED, S.REFUSED, S.TOKEN_USED, S.NOT_CHARGED}


@pytest.mark.parametrize("state", list(IntentState))
def test_every_sale_cell_is_a_move_or_a_refusal_with_its_reason(state: IntentState) -> None:
    row = moves.SALE_MOVES[state]
    assert set(row) == set(SaleEvent), f"{state} lacks {set(SaleEvent) - set(row)}"
    for event in SaleEvent:
        cell = moves.sale_cell(state, event)
        if isinstance(cell, Refusal):
            assert cell.reason.strip(), (state, event)
            with pytest.raises(IllegalMove, match=cell.reason[:20]):
                moves.sale_move(state, event)
        else:
            assert isinstance(cell, Move)
            assert isinstance(cell.next, IntentState)
            assert moves.sale_move(state, event) is cell
            assert (cell.review is not None) == (Effect.OPEN_REVIEW in cell.effects)
            if cell.review is not None:
                assert cell.next is S.NEEDS_REVIEW


@pytest.mark.parametrize("state", list(ReversalState))
def test_every_refund_cell_is_a_move_or_a_refusal_with_its_reason(state: ReversalState) -> None:
    row = moves.REFUND_MOVES[state]
    assert set(row) == set(RefundEvent)
    for event in RefundEvent:
        cell = row[event]
        if isinstance(cell, Refusal):
            assert cell.reason.strip()
            with pytest.raises(IllegalMove):
                moves.refund_move(state, event)
        else:
            assert isinstance(cell.next, ReversalState)


def test_a_missing_cell_is_caught_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    row = dict(moves.SALE_MOVES[S.ABANDONED])
    del row[E.SALE_REFUND_REFUSED]
    monkeypatch.setitem(moves.SALE_MOVES, S.ABANDONED, row)
    with pytest.raises(AssertionError, match="sale_refund_refused"):
        moves._complete()


def test_the_store_allows_exactly_the_tables_moves() -> None:
    """`states.TRANSITIONS` (what the store lets through) is the table's moves, no more."""
    for state in IntentState:
        nexts = {c.next for c in moves.SALE_MOVES[state].values() if isinstance(c, Move)}
        assert TRANSITIONS.get(state, frozenset()) == nexts == moves.successors(state), state
    for rstate in ReversalState:
        assert REVERSAL_TRANSITIONS[rstate] == moves.refund_successors(rstate), rstate


def test_every_review_reason_is_opened_by_some_move() -> None:
    assert set(ReviewReason) == moves.REVIEW_REASONS_IN_TABLE


def test_charged_states_say_so_in_every_move_that_reaches_them() -> None:
    for state in IntentState:
        for event, cell in moves.SALE_MOVES[state].items():
            if not isinstance(cell, Move) or cell.next is state:
                continue
            if cell.next in CHARGED_STATES:
                if event is E.SALE_REFUNDED:
                    # a refund is queued only on proof (the sequences below check it)
                    assert cell.charged is Charged.KEEP
                    continue
                assert cell.charged is Charged.YES, (state, event)
                assert event in PROOF, f"{state} → {cell.next} on {event}: not a proof"
            if cell.next in NOT_CHARGED_STATES:
                assert cell.charged is Charged.NO, (state, event)
                assert event in ABSENCE, f"{state} → {cell.next} on {event}: not proof of absence"


def test_a_refused_refund_opens_a_review_wherever_it_can_happen() -> None:
    for state in IntentState:
        cell = moves.sale_cell(state, E.SALE_REFUND_REFUSED)
        if isinstance(cell, Move) and cell.next is not state:
            assert cell.next is S.NEEDS_REVIEW
            assert cell.review is ReviewReason.REFUND_REFUSED
            assert cell.charged is Charged.YES
    refused = moves.sale_move(S.ABANDONED, E.SALE_REFUND_REFUSED)
    assert refused.review is ReviewReason.REFUND_REFUSED
    with pytest.raises(IllegalMove, match="proven charged"):
        moves.sale_move(S.NEEDS_REVIEW, E.DECIDE_NOT_CHARGED_WHEN_PROVEN)


def test_a_clean_answer_after_an_unclear_attempt_is_not_final() -> None:
    for clean in (E.REPLY_DECLINED, E.REPLY_REFUSED, E.REPLY_TOKEN_USED):
        later = moves.reply_event(clean, unclear_before=True)
        assert moves.sale_move(S.UNRESOLVED, later).next is S.UNRESOLVED
        assert moves.sale_move(S.UNRESOLVED, later).charged is Charged.KEEP
    rejected = moves.reply_event(E.REPLY_CREDENTIALS_REJECTED, unclear_before=True)
    assert moves.sale_move(S.UNRESOLVED, rejected).charged is Charged.UNKNOWN
    assert moves.reply_event(E.REPLY_UNCLEAR, unclear_before=True) is E.REPLY_UNCLEAR
    with pytest.raises(ValueError, match="not a reply"):
        moves.reply_event(E.LOOKUP_PROVEN, unclear_before=False)


def test_absence_words_map_to_their_events() -> None:
    assert moves.absence_event("wait", None) is E.LOOKUP_NOT_YET
    assert moves.absence_event("unmeasured", "declined") is E.LOOKUP_UNMEASURED
    assert moves.absence_event("final", None) is E.LOOKUP_ABSENT
    assert moves.absence_event("final", "declined") is E.LOOKUP_ABSENT_AFTER_DECLINE
    assert moves.absence_event("final", "refused") is E.LOOKUP_ABSENT_AFTER_REFUSAL
    assert moves.absence_event("final", "review") is E.LOOKUP_ABSENT_AFTER_CONFLICT
    assert moves.absence_event("final", "not_charged") is E.LOOKUP_ABSENT_AFTER_CONFLICT
    with pytest.raises(ValueError, match="not an absence"):
        moves.absence_event("maybe", None)
    assert moves.dispute_event(ReviewReason.CONTESTED_ROW, settled=False) is (
        E.LOOKUP_DISPUTED_UNSETTLED
    )


def test_a_proof_on_a_row_refunded_by_hand_is_its_own_event() -> None:
    """An open sale proven on a row the owner refunds by hand is not sold: a person closes
    it; an abandoned one takes that refund as its own."""
    by_hand = E.LOOKUP_PROVEN_REFUNDED_ROW
    assert moves.proven_event(E.LOOKUP_PROVEN, refunded_by_hand=True) is by_hand
    assert moves.proven_event(E.LOOKUP_PROVEN, refunded_by_hand=False) is E.LOOKUP_PROVEN
    confirm = E.LOOKUP_MATCH_TO_CONFIRM  # the key's reply is checked against the queue
    assert moves.proven_event(confirm, refunded_by_hand=True) is confirm
    for state in (S.PENDING, S.UNRESOLVED):
        move = moves.sale_move(state, by_hand)
        assert (move.next, move.review, move.charged) == (
            S.NEEDS_REVIEW,
            ReviewReason.REVERSED_ROW,
            Charged.YES,
        )
    assert Effect.REFUND in moves.sale_move(S.ABANDONED, by_hand).effects
    assert moves.sale_move(S.ABANDONED, by_hand) == moves.sale_move(S.ABANDONED, E.LOOKUP_PROVEN)


# --- random event sequences through the table ------------------------------------------

#: the raw facts a driver may gather; replies go through `reply_event` as a driver does
RAW = [
    e
    for e in SaleEvent
    if e not in moves._AFTER_UNCLEAR.values() and e is not E.DECIDE_NOT_CHARGED_WHEN_PROVEN
]


#: the facts the drive gathers: for an abandoned sale, only while its history is watched
DRIVEN = moves._LOOKUPS | {E.OTHER_PAIRING, E.LOOKUP_DUE, E.SEND_DUE, E.DEADLINE}


@dataclass
class Sale:
    """A sale as the table moves it, with the history of what it was told."""

    state: IntentState = S.PENDING
    charged: int | None = None
    unclear: bool = False
    seen: list[SaleEvent] = field(default_factory=list)
    reviews: list[ReviewReason] = field(default_factory=list)
    refunds_owed: int = 0
    watching: bool = False

    def feed(self, raw: SaleEvent) -> Move | None:
        if raw in (E.SALE_REFUNDED, E.SALE_REFUND_REFUSED) and not self.refunds_owed:
            return None  # a refund's answer comes only for a refund that was queued
        if raw in DRIVEN and self.state is S.ABANDONED and not self.watching:
            return None  # the drive works on an abandoned sale only while it is watched
        event = moves.reply_event(raw, self.unclear) if raw in moves._REPLIES else raw
        if raw is E.DECIDE_NOT_CHARGED and self.charged == 1:
            event = E.DECIDE_NOT_CHARGED_WHEN_PROVEN  # as `reviews.decision_event` names it
        cell = moves.sale_cell(self.state, event)
        if isinstance(cell, Refusal):
            with pytest.raises(IllegalMove):
                moves.sale_move(self.state, event)
            return None
        if event in (E.REPLY_UNCLEAR, E.INTERRUPTED) or event.endswith("after_unclear"):
            self.unclear = True
        self.state = IntentState(cell.next)
        self.charged = moves.charged_value(cell, self.charged)
        self.seen.append(event)
        if cell.review is not None:
            self.reviews.append(cell.review)
        if Effect.REFUND in cell.effects:
            self.refunds_owed += 1
        if Effect.WATCH in cell.effects:
            self.watching = True
        if Effect.STOP_WATCHING in cell.effects:
            self.watching = False
        if event in (E.SALE_REFUNDED, E.SALE_REFUND_REFUSED):
            self.refunds_owed = max(0, self.refunds_owed - 1)
        return cell


def _check(sale: Sale) -> None:
    if sale.state in SOLD_STATES or sale.state in CHARGED_STATES:
        assert PROOF & set(sale.seen), f"charged without proof: {sale.seen}"
        assert sale.charged == 1
    if sale.state in NOT_CHARGED_STATES:
        assert sale.charged == 0
        # a charge once proven is never undone by a word: only a refund returns the money
        assert not {E.REPLY_APPROVED, E.LOOKUP_PROVEN, E.LOOKUP_PROVEN_REFUNDED_ROW} & set(
            sale.seen
        ), sale.seen
        proofs = ABSENCE & set(sale.seen)
        assert proofs, f"not charged without proof of absence: {sale.seen}"
        if sale.unclear:
            # once the truth was unknown, only proven absence or a person says "not charged"
            assert proofs - {E.REPLY_DECLINED, E.REPLY_REFUSED, E.REPLY_TOKEN_USED}
    if sale.state is S.NEEDS_REVIEW:
        assert sale.reviews, "in review without a reason"


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(RAW), max_size=40))
def test_random_event_sequences_keep_the_rules(events: list[SaleEvent]) -> None:
    sale = Sale()
    for raw in events:
        before = sale.state
        cell = sale.feed(raw)
        if cell is not None:
            assert cell.next in TRANSITIONS[before]
        _check(sale)


class AbandonedAndRefunded(RuleBasedStateMachine):
    """An abandoned sale proven charged, its refund through the refund table: the sale ends
    refunded or in review, never silent with the customer's money."""

    def __init__(self) -> None:
        super().__init__()
        self.sale = Sale()
        self.refund: ReversalState | None = None

    @rule(raw=st.sampled_from(RAW))
    def sale_event(self, raw: SaleEvent) -> None:
        if raw in (E.SALE_REFUNDED, E.SALE_REFUND_REFUSED):
            return  # only the refund's own answer says so (`refund_answer`)
        cell = self.sale.feed(raw)
        if cell is not None and Effect.REFUND in cell.effects:
            self.refund = ReversalState.PENDING

    @precondition(lambda self: self.refund is ReversalState.PENDING)
    @rule(event=st.sampled_from(list(RefundEvent)))
    def refund_answer(self, event: RefundEvent) -> None:
        assert self.refund is not None
        cell = moves.REFUND_MOVES[self.refund][event]
        if isinstance(cell, Refusal):
            return
        self.refund = ReversalState(cell.next)
        if self.refund is ReversalState.REFUNDED:
            self.sale.feed(moves.refund_event(refunded=True))
        elif self.refund is ReversalState.REFUSED:
            self.sale.feed(moves.refund_event(refunded=False))

    @invariant()
    def never_silent(self) -> None:
        _check(self.sale)
        if self.refund is ReversalState.REFUSED:
            assert ReviewReason.REFUND_REFUSED in self.sale.reviews
            assert self.sale.state in (S.NEEDS_REVIEW, S.CHARGED_PER_REVIEW, S.REFUNDED_PER_REVIEW)
        if self.sale.state is S.ABANDONED and self.sale.charged == 1:
            # proven charged while abandoned: a refund is on its way
            assert self.refund in (ReversalState.PENDING, ReversalState.CREDENTIALS_REJECTED)


AbandonedAndRefunded.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestAbandonedAndRefunded = AbandonedAndRefunded.TestCase


# --- the drawing and the docs are the table's ------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "ledger.md"


def test_docs_ledger_lists_exactly_the_tables_moves() -> None:
    text = DOCS.read_text(encoding="utf-8")
    shown = text.split("<!-- moves:begin -->\n", 1)[1].split("<!-- moves:end -->", 1)[0]
    assert shown == moves.moves_markdown(), (
        "docs/ledger.md's table of moves is not the table's: paste in "
        "`python -c 'from qrpos.ledger.moves import moves_markdown; print(moves_markdown())'`"
    )


def _drawn_edges() -> set[tuple[IntentState, IntentState]]:
    """The arrows of the diagram in `states.py`'s docstring, as (from, to) pairs."""
    from qrpos.ledger import states

    doc = states.__doc__ or ""
    drawing = doc.split("::\n", 1)[1].split("\n\n", 1)[0]
    names = {s.value: s for s in IntentState}
    edges: set[tuple[IntentState, IntentState]] = set()
    source: IntentState | None = None
    for line in drawing.splitlines():
        first = re.match(r"^ {4}([a-z_]+)", line)
        if first and first.group(1) in names:
            source = names[first.group(1)]
        if "▶" in line and source is not None:
            after = line.split("▶", 1)[1]
            edges |= {(source, names[w]) for w in re.findall(r"[a-z_]+", after) if w in names}
    return edges


def test_the_state_diagram_draws_exactly_the_tables_moves() -> None:
    drawn = _drawn_edges()
    table = {
        (state, IntentState(cell.next))
        for state, row in moves.SALE_MOVES.items()
        for cell in row.values()
        if isinstance(cell, Move) and cell.next is not state
    }
    assert drawn - table == set(), f"drawn, not in the table: {sorted(drawn - table)}"
    assert table - drawn == set(), f"in the table, not drawn: {sorted(table - drawn)}"


@pytest.mark.parametrize("state", sorted(OPEN_STATES))
def test_the_cashier_is_answered_exactly_when_the_sale_leaves_the_open_states(
    state: IntentState,
) -> None:
    """`answer_cashier` is carried out by the drive (`resolver.drive`), which holds the
    till while the sale is open and returns it the moment it is not, or at the deadline.
    So for a sale the till waits on, the table's effect and that rule must agree in every
    cell: a move that leaves the open states answers; one that stays does not, but the
    deadline's (the till is never held past it: "still checking")."""
    for event, cell in moves.SALE_MOVES[state].items():
        if not isinstance(cell, Move):
            continue
        answers = Effect.ANSWER_CASHIER in cell.effects
        leaves = cell.next not in OPEN_STATES
        assert answers == (leaves or event is E.DEADLINE), (state, event, cell)
