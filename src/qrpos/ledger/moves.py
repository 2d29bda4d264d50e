"""The ledger's moves as data: for a sale and for a refund, (state, event) → what happens.

The model is h11's `_state.py`: one dictionary lookup answers "event X in state Y", and
every cell of the table is written down, as a `Move` (the next state, whether the customer
is known to be charged, and the effects the driver carries out) or as a `Refusal` with its
reason. A cell the table does not have is a bug, found at import (`_complete`) and by
`tests/ledger/test_moves.py`, which walks every cell.

Events are facts the drivers gathered (a reply of each kind, a look-up's verdict, the
cashier's abandon, a person's decision, a refund's answer, time passing); the drivers
name the event (`reply_event`, `absence_event`, `dispute_event`, `proven_event`,
`refund_event` here; `lookup.verdict_event`, `reviews.decision_event`, `timing.next_step`),
look the move up (`sale_move`, `refund_move`) and apply it. None of them chooses a state.

Pure: no sqlite3, httpx, clock or random (an import-linter contract holds it so).

Proof from history, and the till (docs/architecture.md, "A charge, end to end", step 6;
issue 47): a window pairing never moves money and never says "paid" by itself, because
the history's rows carry no key and another install is invisible until its rows show.
`timing.match_rule` is the rule: while the sale is open and its key may still be sent,
the key decides (`lookup_match_to_confirm`: a send, with no wait before it; owed through
any number of 429s, each after its `Retry-After`, until the resend horizon); otherwise,
a 409 "token already used" to the key after an unclear attempt included (another install
may have spent the token), a person decides with the row offered (`lookup_unconfirmed`,
review `unconfirmed_row`): an abandoned sale is never refunded on a window pairing.
"""

from __future__ import annotations

from typing import Final

from qrpos.ledger.events import (
    Cell,
    Charged,
    Effect,
    IllegalMove,
    Move,
    RefundEvent,
    Refusal,
    ReviewReason,
    SaleEvent,
)
from qrpos.ledger.states import IntentState, ReversalState

S, E, F = IntentState, SaleEvent, Effect

_REPLIES: Final = frozenset(e for e in SaleEvent if e.startswith("reply_") or "after_unclear" in e)
_LOOKUPS: Final = frozenset(e for e in SaleEvent if e.startswith("lookup_"))
_DECISIONS: Final = frozenset(e for e in SaleEvent if e.startswith("decide_"))
_REFUND_ANSWERS: Final = frozenset({E.SALE_REFUNDED, E.SALE_REFUND_REFUSED})
_ABANDONS: Final = frozenset({E.ABANDON_UNCLEAR, E.ABANDON_CLEAN})


def _review(reason: ReviewReason, charged: Charged = Charged.UNKNOWN) -> Move:
    return Move(S.NEEDS_REVIEW, (F.OPEN_REVIEW, F.STOP_WATCHING, F.ANSWER_CASHIER), charged, reason)


def _stay(state: IntentState, *effects: Effect) -> Move:
    return Move(state, effects)


def _refuse(events: frozenset[SaleEvent], reason: str) -> dict[SaleEvent, Cell]:
    return dict.fromkeys(events, Refusal(reason))


def _open_row(state: IntentState) -> dict[SaleEvent, Cell]:
    """`pending` and `unresolved`: the key may be out, and the resolver drives the sale."""
    answered = (F.ANSWER_CASHIER,)
    return {
        E.REPLY_APPROVED: Move(S.APPROVED, answered, Charged.YES),
        E.REPLY_MISMATCH: _review(ReviewReason.REPLY_MISMATCH),
        E.REPLY_UNCLEAR: Move(S.UNRESOLVED, (F.WAIT,)),
        E.REPLY_NOT_DELIVERED: Move(S.UNRESOLVED, (F.WAIT,)),
        E.REPLY_DECLINED: Move(S.DECLINED, answered, Charged.NO),
        E.REPLY_REFUSED: Move(S.REFUSED, answered, Charged.NO),
        E.REPLY_TOKEN_USED: Move(S.TOKEN_USED, answered, Charged.NO),
        E.REPLY_CREDENTIALS_REJECTED: Move(S.CREDENTIALS_REJECTED, answered, Charged.NO),
        # the service answered the key after an unclear attempt: the history confirms
        E.DECLINED_AFTER_UNCLEAR: Move(S.UNRESOLVED, (F.LOOK_UP,)),
        E.REFUSED_AFTER_UNCLEAR: Move(S.UNRESOLVED, (F.LOOK_UP,)),
        E.CONFLICT_AFTER_UNCLEAR: Move(S.UNRESOLVED, (F.LOOK_UP,)),
        E.REJECTED_AFTER_UNCLEAR: Move(S.CREDENTIALS_REJECTED, answered, Charged.UNKNOWN),
        E.LOOKUP_PROVEN: Move(S.CHARGED_PER_HISTORY, answered, Charged.YES),
        E.LOOKUP_MATCH_TO_CONFIRM: _stay(state, F.SEND),
        # proven on a row the owner refunds by hand: its money is going back, so it is not
        # sold; a person closes it (by refunding the row, which takes that refund as the
        # sale's), as when the history already lists the row reversed
        E.LOOKUP_PROVEN_REFUNDED_ROW: _review(ReviewReason.REVERSED_ROW, Charged.YES),
        E.LOOKUP_AMBIGUOUS: _review(ReviewReason.AMBIGUOUS_HISTORY),
        E.LOOKUP_CONTESTED: _review(ReviewReason.CONTESTED_ROW),
        E.LOOKUP_REVERSED_ROW: _review(ReviewReason.REVERSED_ROW),
        E.LOOKUP_FOREIGN: _review(ReviewReason.FOREIGN_ACTIVITY),
        # a row only the window pairs with the sale, its key silent for good: a person
        # decides with the rows offered, never "paid" nor a refund (`timing.match_rule`)
        E.LOOKUP_UNCONFIRMED: _review(ReviewReason.UNCONFIRMED_ROW),
        E.LOOKUP_DISPUTED_UNSETTLED: _stay(state, F.WAIT),
        E.LOOKUP_ABSENT: Move(S.NOT_CHARGED, answered, Charged.NO),
        E.LOOKUP_ABSENT_AFTER_DECLINE: Move(S.DECLINED, answered, Charged.NO),
        E.LOOKUP_ABSENT_AFTER_REFUSAL: Move(S.REFUSED, answered, Charged.NO),
        E.LOOKUP_ABSENT_AFTER_CONFLICT: _review(ReviewReason.UNVERIFIED_CONFLICT),
        E.LOOKUP_UNMEASURED: _review(ReviewReason.UNMEASURED_CLOCK),
        E.LOOKUP_NOT_YET: _stay(state, F.WAIT),
        E.LOOKUP_FAILED: _stay(state, F.WAIT),
        E.LOOKUP_CREDENTIALS_REJECTED: Move(S.CREDENTIALS_REJECTED, answered),
        E.ABANDON_UNCLEAR: Move(S.ABANDONED, (F.WATCH, F.ANSWER_CASHIER), Charged.UNKNOWN),
        E.ABANDON_CLEAN: Move(S.ABANDONED, (F.ANSWER_CASHIER,), Charged.NO),
        **_refuse(_DECISIONS, "not waiting for a review"),
        **_refuse(_REFUND_ANSWERS, "no refund of this sale was queued: it is not proven charged"),
        E.SEND_DUE: _stay(state, F.SEND),
        E.LOOKUP_DUE: _stay(state, F.LOOK_UP),
        # nothing ever reached the service (refused connections, 429s) and it may no longer
        # be sent: not charged
        E.NEVER_DELIVERED: Move(S.NOT_CHARGED, answered, Charged.NO),
        E.INTERRUPTED: Move(S.UNRESOLVED, (F.LOOK_UP,)),
        E.OTHER_PAIRING: _review(ReviewReason.OTHER_TERMINAL),
        E.REPAIRED: Refusal("not stopped by a 401"),
        E.DEADLINE: _stay(state, F.ANSWER_CASHIER),
    }


def _rejected_row() -> dict[SaleEvent, Cell]:
    """`credentials_rejected`: nothing is sent until the terminal is re-paired."""
    state = S.CREDENTIALS_REJECTED
    return {
        **_refuse(_REPLIES, "nothing is sent after a 401 until the terminal is re-paired"),
        **_refuse(_LOOKUPS, "nothing is read after a 401 until the terminal is re-paired"),
        E.ABANDON_UNCLEAR: Move(S.ABANDONED, (F.WATCH, F.ANSWER_CASHIER), Charged.UNKNOWN),
        E.ABANDON_CLEAN: Move(S.ABANDONED, (F.ANSWER_CASHIER,), Charged.NO),
        **_refuse(_DECISIONS, "not waiting for a review"),
        **_refuse(_REFUND_ANSWERS, "no refund of this sale was queued"),
        E.SEND_DUE: Refusal("not sent until the terminal is re-paired"),
        E.LOOKUP_DUE: Refusal("not read until the terminal is re-paired"),
        E.NEVER_DELIVERED: Refusal("a 401 is an answer: the sale was delivered"),
        E.INTERRUPTED: Refusal("no request is in flight after a 401"),
        E.OTHER_PAIRING: _review(ReviewReason.OTHER_TERMINAL),
        # after re-pairing only the history can tell: the customer has long gone
        E.REPAIRED: Move(S.UNRESOLVED, (F.LOOK_UP,)),
        E.DEADLINE: _stay(state, F.ANSWER_CASHIER),
    }


def _abandoned_row() -> dict[SaleEvent, Cell]:
    """`abandoned`: never sent again; the history is watched while the outcome is open."""
    state, watched = S.ABANDONED, "an abandoned sale is never sent again"
    # proven: the history has spoken; the refund's answer is all that is left to hear
    refund = (F.REFUND, F.STOP_WATCHING)
    return {
        **_refuse(_REPLIES, watched),
        # a refund goes to one customer's wallet: only on the row that is this sale's in
        # every pairing (`claims.judge` with `abandoned`)
        E.LOOKUP_PROVEN: Move(state, refund, Charged.YES),
        E.LOOKUP_MATCH_TO_CONFIRM: Refusal(watched + ": no send confirms a match"),
        # the refund made by hand becomes this sale's (`refund_queue.refund_for_sale`)
        E.LOOKUP_PROVEN_REFUNDED_ROW: Move(state, refund, Charged.YES),
        E.LOOKUP_AMBIGUOUS: _review(ReviewReason.AMBIGUOUS_HISTORY),
        E.LOOKUP_CONTESTED: _review(ReviewReason.CONTESTED_ROW),
        E.LOOKUP_REVERSED_ROW: _review(ReviewReason.REVERSED_ROW),
        E.LOOKUP_FOREIGN: _review(ReviewReason.FOREIGN_ACTIVITY),
        # a row only the window pairs with the sale, its key silent for good: a person
        # decides with the rows offered, never "paid" nor a refund (`timing.match_rule`)
        E.LOOKUP_UNCONFIRMED: _review(ReviewReason.UNCONFIRMED_ROW),
        E.LOOKUP_DISPUTED_UNSETTLED: _stay(state, F.WAIT),
        E.LOOKUP_ABSENT: Move(state, (F.STOP_WATCHING,), Charged.NO),
        E.LOOKUP_ABSENT_AFTER_DECLINE: Move(state, (F.STOP_WATCHING,), Charged.NO),
        E.LOOKUP_ABSENT_AFTER_REFUSAL: Move(state, (F.STOP_WATCHING,), Charged.NO),
        E.LOOKUP_ABSENT_AFTER_CONFLICT: _review(ReviewReason.UNVERIFIED_CONFLICT),
        E.LOOKUP_UNMEASURED: _review(ReviewReason.UNMEASURED_CLOCK),
        E.LOOKUP_NOT_YET: _stay(state, F.WAIT),
        E.LOOKUP_FAILED: _stay(state, F.WAIT),
        # a 401 while watching: the next pass asks again (the till waits for nothing)
        E.LOOKUP_CREDENTIALS_REJECTED: _stay(state, F.WAIT),
        **_refuse(_ABANDONS, "already abandoned"),
        **_refuse(_DECISIONS, "not waiting for a review"),
        # (its charge was proven before its refund was queued: `LOOKUP_PROVEN` above)
        E.SALE_REFUNDED: Move(S.REVERSED_AFTER_ABANDON, (F.STOP_WATCHING,)),
        # the customer was charged and the refund was refused: never silence
        E.SALE_REFUND_REFUSED: _review(ReviewReason.REFUND_REFUSED, Charged.YES),
        E.SEND_DUE: Refusal(watched),
        E.LOOKUP_DUE: _stay(state, F.LOOK_UP),
        E.NEVER_DELIVERED: Refusal("abandoned before anything unclear: nothing to watch"),
        E.INTERRUPTED: Refusal("abandon ends any request in flight"),
        E.OTHER_PAIRING: _review(ReviewReason.OTHER_TERMINAL),
        E.REPAIRED: Refusal("not stopped by a 401"),
        E.DEADLINE: _stay(state),
    }


def _review_row() -> dict[SaleEvent, Cell]:
    """`needs_review`: a person decides; abandon never ends the question."""
    state, asked = S.NEEDS_REVIEW, "in review: a person decides"
    return {
        **_refuse(_REPLIES | _LOOKUPS, asked),
        **_refuse(_ABANDONS, asked + " (abandon stops the till's wait, never the question)"),
        E.DECIDE_CHARGED: Move(S.CHARGED_PER_REVIEW, (), Charged.YES),
        E.DECIDE_REFUND: Move(S.REFUNDED_PER_REVIEW, (F.REFUND,), Charged.YES),
        E.DECIDE_NOT_CHARGED: Move(S.NOT_CHARGED, (), Charged.NO),
        E.DECIDE_NOT_CHARGED_WHEN_PROVEN: Refusal(
            "the sale is proven charged: keep it as paid or refund it"
        ),
        # an earlier refund's late answer changes nothing: the review is the question
        E.SALE_REFUNDED: _stay(state),
        E.SALE_REFUND_REFUSED: _stay(state),
        **_refuse(frozenset({E.SEND_DUE, E.LOOKUP_DUE, E.NEVER_DELIVERED, E.INTERRUPTED}), asked),
        E.OTHER_PAIRING: Refusal(asked),
        E.REPAIRED: Refusal(asked),
        E.DEADLINE: _stay(state, F.ANSWER_CASHIER),
    }


def _settled_row(state: IntentState, why: str) -> dict[SaleEvent, Cell]:
    """A state nothing moves on its own: every event is refused with `why`."""
    return _refuse(frozenset(SaleEvent), why)


def _refunded_per_review_row() -> dict[SaleEvent, Cell]:
    """`refunded_per_review`: the refund a person chose is queued; its answer still counts."""
    state = S.REFUNDED_PER_REVIEW
    row = _settled_row(state, "settled by a person; the refund is queued")
    row[E.SALE_REFUNDED] = _stay(state)
    # the person chose a refund and the service refused it: the customer still paid
    row[E.SALE_REFUND_REFUSED] = _review(ReviewReason.REFUND_REFUSED, Charged.YES)
    return row


#: every (state, event) of a sale: the one place a sale's next state is chosen
SALE_MOVES: Final[dict[IntentState, dict[SaleEvent, Cell]]] = {
    S.PENDING: _open_row(S.PENDING),
    S.UNRESOLVED: _open_row(S.UNRESOLVED),
    S.CREDENTIALS_REJECTED: _rejected_row(),
    S.ABANDONED: _abandoned_row(),
    S.NEEDS_REVIEW: _review_row(),
    S.APPROVED: _settled_row(S.APPROVED, "approved on a reply: settled"),
    S.CHARGED_PER_HISTORY: _settled_row(S.CHARGED_PER_HISTORY, "proven by history: settled"),
    S.CHARGED_PER_REVIEW: _settled_row(S.CHARGED_PER_REVIEW, "settled by a person"),
    S.REFUNDED_PER_REVIEW: _refunded_per_review_row(),
    S.REVERSED_AFTER_ABANDON: _settled_row(S.REVERSED_AFTER_ABANDON, "refunded: settled"),
    S.DECLINED: _settled_row(S.DECLINED, "declined: nothing was charged"),
    S.REFUSED: _settled_row(S.REFUSED, "refused: nothing was charged"),
    S.TOKEN_USED: _settled_row(S.TOKEN_USED, "the code was spent: nothing was charged"),
    S.NOT_CHARGED: _settled_row(S.NOT_CHARGED, "proven not charged: settled"),
}

R, RE = ReversalState, RefundEvent
_RETRY = Move(R.PENDING, (F.WAIT,))

#: every (state, event) of a refund
REFUND_MOVES: Final[dict[ReversalState, dict[RefundEvent, Cell]]] = {
    R.PENDING: {
        RE.SEND_DUE: Move(R.PENDING, (F.SEND,)),
        RE.ANSWER_REFUNDED: Move(R.REFUNDED),
        # 409 "already reversed": the refund had landed
        RE.ANSWER_ALREADY_REVERSED: Move(R.REFUNDED),
        # the contract's success is 204 alone; a 202 may mean "accepted, not yet applied"
        RE.ANSWER_UNEXPECTED_2XX: _RETRY,
        RE.ANSWER_UNCLEAR: _RETRY,
        RE.ANSWER_RATE_LIMITED: _RETRY,
        RE.ANSWER_REFUSED: Move(R.REFUSED),
        RE.ANSWER_CREDENTIALS_REJECTED: Move(R.CREDENTIALS_REJECTED),
        RE.REPAIRED: Refusal("not stopped by a 401"),
    },
    R.CREDENTIALS_REJECTED: {
        **dict.fromkeys(RefundEvent, Refusal("kept until the terminal is re-paired")),
        RE.REPAIRED: Move(R.PENDING, (F.SEND,)),
    },
    R.REFUNDED: dict.fromkeys(RefundEvent, Refusal("refunded: settled")),
    R.REFUSED: dict.fromkeys(RefundEvent, Refusal("refused: a new refund is a new row")),
}


def _complete() -> None:
    """Every cell is written: a missing one is a bug caught at import."""
    for state in IntentState:
        missing = set(SaleEvent) - set(SALE_MOVES[state])
        if missing:
            raise AssertionError(f"sale moves lack {state} × {sorted(missing)}")
    for rstate in ReversalState:
        missing_r = set(RefundEvent) - set(REFUND_MOVES[rstate])
        if missing_r:
            raise AssertionError(f"refund moves lack {rstate} × {sorted(missing_r)}")


_complete()


def sale_cell(state: IntentState, event: SaleEvent) -> Cell:
    """The table's answer for a sale (a move or a refusal)."""
    return SALE_MOVES[state][event]


def sale_move(state: IntentState, event: SaleEvent) -> Move:
    """The move for a sale; raises `IllegalMove` with the cell's reason for a refusal."""
    cell = SALE_MOVES[state][event]
    if isinstance(cell, Refusal):
        raise IllegalMove(f"sale in {state}: {event} refused ({cell.reason})")
    return cell


def refund_move(state: ReversalState, event: RefundEvent) -> Move:
    """The move for a refund; raises `IllegalMove` with the cell's reason for a refusal."""
    cell = REFUND_MOVES[state][event]
    if isinstance(cell, Refusal):
        raise IllegalMove(f"refund in {state}: {event} refused ({cell.reason})")
    return cell


def charged_value(move: Move, old: int | None) -> int | None:
    """The stored `charged` after `move` (1, 0, None)."""
    return {Charged.YES: 1, Charged.NO: 0, Charged.UNKNOWN: None, Charged.KEEP: old}[move.charged]


def successors(state: IntentState) -> frozenset[IntentState]:
    """Every state a sale in `state` may move to (the store refuses any other)."""
    return frozenset(IntentState(c.next) for c in SALE_MOVES[state].values() if isinstance(c, Move))


def refund_successors(state: ReversalState) -> frozenset[ReversalState]:
    """Every state a refund in `state` may move to (itself included: a row of the queue is
    rewritten in place, its state unchanged, when only its schedule or message moves)."""
    cells = REFUND_MOVES[state].values()
    return frozenset(ReversalState(c.next) for c in cells if isinstance(c, Move)) | {state}


#: the clean reply's event → the same reply after an earlier unclear attempt
_AFTER_UNCLEAR: Final = {
    E.REPLY_DECLINED: E.DECLINED_AFTER_UNCLEAR,
    E.REPLY_REFUSED: E.REFUSED_AFTER_UNCLEAR,
    # a 409 may be the duplicate of a charge that committed ("verify before recharging")
    E.REPLY_TOKEN_USED: E.CONFLICT_AFTER_UNCLEAR,
    E.REPLY_CREDENTIALS_REJECTED: E.REJECTED_AFTER_UNCLEAR,
}


def reply_event(clean: SaleEvent, unclear_before: bool) -> SaleEvent:
    """The event of a reply: a clean answer means something else after an unclear attempt."""
    if clean not in _REPLIES:
        raise ValueError(f"not a reply: {clean}")
    return _AFTER_UNCLEAR.get(clean, clean) if unclear_before else clean


#: what `if_absent` (the key's answer after an unclear attempt) makes of proven absence
_ABSENT_AFTER: Final = {
    None: E.LOOKUP_ABSENT,
    "declined": E.LOOKUP_ABSENT_AFTER_DECLINE,
    "refused": E.LOOKUP_ABSENT_AFTER_REFUSAL,
    "review": E.LOOKUP_ABSENT_AFTER_CONFLICT,
    # how older outboxes stored a 409 to a same-key retry
    "not_charged": E.LOOKUP_ABSENT_AFTER_CONFLICT,
}


#: the word a clean answer after an unclear attempt leaves in `if_absent`
IF_ABSENT: Final = {
    E.DECLINED_AFTER_UNCLEAR: "declined",
    E.REFUSED_AFTER_UNCLEAR: "refused",
    E.CONFLICT_AFTER_UNCLEAR: "review",
}


def absence_event(absence: str, if_absent: str | None) -> SaleEvent:
    """The event of a look-up that found no candidate (`timing.absence`'s word)."""
    if absence == "unmeasured":
        return E.LOOKUP_UNMEASURED
    if absence == "wait":
        return E.LOOKUP_NOT_YET
    if absence != "final":
        raise ValueError(f"not an absence: {absence}")
    return _ABSENT_AFTER.get(if_absent, E.LOOKUP_ABSENT)


_DISPUTES: Final = {
    ReviewReason.AMBIGUOUS_HISTORY: E.LOOKUP_AMBIGUOUS,
    ReviewReason.CONTESTED_ROW: E.LOOKUP_CONTESTED,
    ReviewReason.REVERSED_ROW: E.LOOKUP_REVERSED_ROW,
    ReviewReason.FOREIGN_ACTIVITY: E.LOOKUP_FOREIGN,
    ReviewReason.UNCONFIRMED_ROW: E.LOOKUP_UNCONFIRMED,
}


def dispute_event(reason: ReviewReason, settled: bool) -> SaleEvent:
    """The event of a look-up whose rows prove nothing either way."""
    return _DISPUTES[reason] if settled else E.LOOKUP_DISPUTED_UNSETTLED


def proven_event(event: SaleEvent, *, refunded_by_hand: bool) -> SaleEvent:
    """A look-up's proof on a row that a refund made by hand holds (no sale's; queued, kept
    or landed) is its own event: the customer's money is going back."""
    if refunded_by_hand and event is E.LOOKUP_PROVEN:
        return E.LOOKUP_PROVEN_REFUNDED_ROW
    return event


def refund_event(refunded: bool) -> SaleEvent:
    """The sale's event when the refund of its row ended (refunded, or refused)."""
    return E.SALE_REFUNDED if refunded else E.SALE_REFUND_REFUSED


#: every review reason some move opens: the catalogues and the docs list these
REVIEW_REASONS_IN_TABLE: Final = frozenset(
    c.review
    for row in SALE_MOVES.values()
    for c in row.values()
    if isinstance(c, Move) and c.review is not None
)


def _effects(move: Move) -> str:
    words = [str(e) for e in move.effects]
    if move.review is not None:
        words = [f"open_review({move.review})" if w == Effect.OPEN_REVIEW else w for w in words]
    return ", ".join(words) or "-"


def moves_markdown() -> str:
    """The table's moves as docs/ledger.md shows them (a test holds the two together): one
    line per move, the states that share it together ("stays" keeps the state);
    refusals are left out, as is a cell that stays with no effect."""
    shared: dict[tuple[str, str], list[str]] = {}
    for state, row in SALE_MOVES.items():
        for event, cell in row.items():
            if isinstance(cell, Refusal) or (cell.next is state and not cell.effects):
                continue
            nxt = "stays" if cell.next is state else f"`{cell.next}`"
            shared.setdefault((event, f"{nxt} | {cell.charged} | {_effects(cell)}"), []).append(
                f"`{state}`"
            )
    lines = ["| state | event | next state | charged | effects |", "|---|---|---|---|---|"]
    lines += [f"| {', '.join(states)} | `{ev}` | {rest} |" for (ev, rest), states in shared.items()]
    lines += ["", "| refund state | event | next state | effects |", "|---|---|---|---|"]
    for rstate, rrow in REFUND_MOVES.items():
        for revent, rcell in rrow.items():
            if isinstance(rcell, Move):
                lines.append(f"| `{rstate}` | `{revent}` | `{rcell.next}` | {_effects(rcell)} |")
    return "\n".join(lines) + "\n"
