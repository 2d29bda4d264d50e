"""The states of a charge intent and of a reversal, and which moves between them are legal.

A charge intent (one sale) moves through these states; every move is committed to the
outbox before anything else happens. "Proof" and "review" are defined once, in
`qrpos.ledger.claims`::

    pending ──201 that matches the request─────▶ approved
       │    ──201 that does not match (amount,
       │      type, status, terminal)──────────▶ needs_review   (reply_mismatch)
       │    ──422 (nothing unclear before)─────▶ declined
       │    ──other 4xx (nothing unclear)──────▶ refused
       │    ──409 on a clean first answer──────▶ token_used
       │    ──401──────────────────────────────▶ credentials_rejected
       │    ──no answer / timeout / 5xx / crash▶ unresolved
       │    ──nothing reached, may not resend──▶ not_charged
       │    ──history (after a crash)──────────▶ charged_per_history / needs_review
       │    ──cashier gives up─────────────────▶ abandoned
    unresolved ──201 on a retry (same key)─────▶ approved (or needs_review if it mismatches)
       │    ──422/4xx/409 when no attempt was
       │      unclear (only 429s, refused
       │      connections) ────────────────────▶ declined / refused / token_used
       │    ──409 after an unclear attempt─────▶ needs_review (its row offered, or
       │                                          unverified_conflict without one)
       │    ──history: proof (every pairing)───▶ charged_per_history
       │    ──history: contested or ambiguous,
       │      or another install is active────▶ needs_review
       │    ──history: nothing, on a measured
       │      clock, after late commits settled
       │      (and a same-key answer, or the
       │      ceiling for a silent service)───▶ not_charged / declined / refused
       │    ──401──────────────────────────────▶ credentials_rejected
       │    ──cashier gives up─────────────────▶ abandoned
    credentials_rejected ──re-paired, resolve──▶ unresolved (history lookups only)
       │      ──sent under an old pairing──────▶ needs_review   (other_terminal)
       │      ──cashier gives up───────────────▶ abandoned
    abandoned ──history: proof, refund landed──▶ reversed_after_abandon
       │      ──contested, ambiguous, or the
       │        refund refused─────────────────▶ needs_review   (refund_refused, …)
    needs_review ──owner: "this row is it"─────▶ charged_per_review
       │      ──owner: "refund this row"───────▶ refunded_per_review (refund queued)
       │      ──owner: "nothing was charged"───▶ not_charged
    refunded_per_review ──the refund refused───▶ needs_review   (refund_refused)
       (abandon leaves a review in review: abandon stops the till's wait, never the question)

Every arrow is a move of the table in `qrpos.ledger.moves` (docs/ledger.md lists each
event), and `tests/ledger/test_moves.py` holds this drawing to it: an arrow the table
lacks, or a move the drawing lacks, fails.

`pending`, `unresolved` and an open `credentials_rejected` (one whose `charged` is unknown:
an earlier attempt may have reached the service) block a new sale: `is_open`, the one
definition of "open". Every other state is kept for audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal, TypedDict

from qrpos.said import Said, say


class IntentState(StrEnum):
    """Where a charge intent stands. Values are stored in the outbox and shown in JSON."""

    #: stored; the first request is about to go out or is in flight
    PENDING = "pending"
    #: a 201 that matches the request (proof by reply): charged, the transaction is stored
    APPROVED = "approved"
    #: 422: the service declined it; nothing was charged
    DECLINED = "declined"
    #: another 4xx (400, 403, 404, …): stopped; nothing was charged
    REFUSED = "refused"
    #: 409 on a clean first answer: the customer's QR token was already spent
    TOKEN_USED = "token_used"  # noqa: S105 - a state name, not a secret
    #: 401: stopped until the terminal is re-paired; the row is kept
    CREDENTIALS_REJECTED = "credentials_rejected"
    #: a request may have reached the service without a clear answer (or a clean answer
    #: came after an unclear one and the history must confirm it); the resolver works on it
    UNRESOLVED = "unresolved"
    #: the history proves it: every pairing of the rows with the sales that could own them
    #: gives this sale one (`claims.judge`)
    CHARGED_PER_HISTORY = "charged_per_history"
    #: proven absent (no request can still land, the history on a measured clock shows no
    #: row), nothing ever reached the service, or a person decided so
    NOT_CHARGED = "not_charged"
    #: no proof either way, or a charged sale whose refund was refused: a person decides,
    #: for the review's stated reason (`events.ReviewReason`), never a guess
    NEEDS_REVIEW = "needs_review"
    #: the cashier gave up; never sent again (the history is still watched when a request
    #: may have reached the service: `watching`)
    ABANDONED = "abandoned"
    #: abandoned, later proven charged by the history, and refunded automatically (204/409)
    REVERSED_AFTER_ABANDON = "reversed_after_abandon"
    #: a person decided the review: this history row is this sale (the customer paid)
    CHARGED_PER_REVIEW = "charged_per_review"
    #: a person decided the review: the row was charged wrongly and is refunded (queued;
    #: refused by the service, the sale goes back to review as `refund_refused`)
    REFUNDED_PER_REVIEW = "refunded_per_review"


class ReversalState(StrEnum):
    """Where a reversal (refund) stands."""

    #: stored; the request is about to go out, in flight, or to be retried
    PENDING = "pending"
    #: 204 or 409: the customer has the money back
    REFUNDED = "refunded"
    #: 400/403/404 (or another 4xx): ended with the service's reason
    REFUSED = "refused"
    #: 401: kept until the terminal is re-paired
    CREDENTIALS_REJECTED = "credentials_rejected"


class RefundReason(StrEnum):
    """Why a refund was queued (stored in `reversal.reason` as the value)."""

    #: an abandoned sale proven charged (the table's `Effect.REFUND` after `lookup_proven`)
    ABANDONED = "abandoned"
    #: `qrpos reverse` or the owner's refund of a charge by its id
    MANUAL = "manual"
    #: a person's decision on a review: "refund this row"
    REVIEW = "review"


#: states of a sale that block a new one: the resolver still has to resolve it
OPEN_STATES: Final = frozenset({IntentState.PENDING, IntentState.UNRESOLVED})
#: states that block a new sale only while `charged` is unknown (a 401 after an unclear
#: attempt: the charge may have landed)
OPEN_WHILE_UNKNOWN: Final = frozenset({IntentState.CREDENTIALS_REJECTED})


def is_open(state: IntentState, charged: int | bool | None) -> bool:
    """Does a sale in `state` block a new one? The one definition of "open"."""
    return state in OPEN_STATES or (state in OPEN_WHILE_UNKNOWN and charged is None)


def _sql_list(states: frozenset[IntentState]) -> str:
    return ", ".join(f"'{s.value}'" for s in sorted(states))


#: `is_open` as a SQL condition on `charge_intent` (the states are our own constants)
OPEN_SQL: Final = (
    f"(state IN ({_sql_list(OPEN_STATES)}) OR "
    f"(state IN ({_sql_list(OPEN_WHILE_UNKNOWN)}) AND charged IS NULL))"
)


#: states that mean the customer was charged
CHARGED_STATES: Final = frozenset(
    {
        IntentState.APPROVED,
        IntentState.CHARGED_PER_HISTORY,
        IntentState.REVERSED_AFTER_ABANDON,
        IntentState.CHARGED_PER_REVIEW,
        IntentState.REFUNDED_PER_REVIEW,
    }
)
#: states of a sale that stands charged and kept (the customer paid, nothing refunded):
#: what the till's sales and gross count, however the charge was proven
SOLD_STATES: Final = frozenset(
    {IntentState.APPROVED, IntentState.CHARGED_PER_HISTORY, IntentState.CHARGED_PER_REVIEW}
)


#: every legal move; the store refuses any other (a bug must not corrupt the audit trail).
#: The same moves as the table's (`qrpos.ledger.moves.successors`): tests/ledger/
#: test_moves.py holds the two equal (written out here so that the vocabulary imports
#: nothing of the ledger)
TRANSITIONS: Final[dict[IntentState, frozenset[IntentState]]] = {
    IntentState.PENDING: frozenset(
        {
            IntentState.PENDING,
            IntentState.APPROVED,
            IntentState.DECLINED,
            IntentState.REFUSED,
            IntentState.TOKEN_USED,
            IntentState.CREDENTIALS_REJECTED,
            IntentState.UNRESOLVED,
            IntentState.ABANDONED,
            IntentState.NOT_CHARGED,
            IntentState.NEEDS_REVIEW,
            IntentState.CHARGED_PER_HISTORY,
        }
    ),
    IntentState.UNRESOLVED: frozenset(
        {
            IntentState.UNRESOLVED,
            IntentState.APPROVED,
            IntentState.CHARGED_PER_HISTORY,
            IntentState.NEEDS_REVIEW,
            IntentState.NOT_CHARGED,
            IntentState.DECLINED,
            IntentState.REFUSED,
            # after only 429s or refused connections nothing unclear happened: a 409 is stale
            IntentState.TOKEN_USED,
            IntentState.CREDENTIALS_REJECTED,
            IntentState.ABANDONED,
        }
    ),
    IntentState.CREDENTIALS_REJECTED: frozenset(
        {
            IntentState.CREDENTIALS_REJECTED,
            IntentState.UNRESOLVED,
            IntentState.ABANDONED,
            IntentState.NEEDS_REVIEW,
        }
    ),
    IntentState.ABANDONED: frozenset(
        {IntentState.ABANDONED, IntentState.REVERSED_AFTER_ABANDON, IntentState.NEEDS_REVIEW}
    ),
    IntentState.NEEDS_REVIEW: frozenset(
        {
            IntentState.NEEDS_REVIEW,
            IntentState.CHARGED_PER_REVIEW,
            IntentState.REFUNDED_PER_REVIEW,
            IntentState.NOT_CHARGED,
        }
    ),
    # a refund a person chose, refused by the service: back to a person
    IntentState.REFUNDED_PER_REVIEW: frozenset(
        {IntentState.REFUNDED_PER_REVIEW, IntentState.NEEDS_REVIEW}
    ),
}


def can_move(old: IntentState, new: IntentState) -> bool:
    """True when the state machine allows `old` → `new`."""
    return new in TRANSITIONS.get(old, frozenset())


#: every legal move of a reversal (the table's, `qrpos.ledger.moves.refund_successors`):
#: retried while pending; refunded and refused are final; one stopped by a 401 goes back
#: to pending once the terminal is re-paired
REVERSAL_TRANSITIONS: Final[dict[ReversalState, frozenset[ReversalState]]] = {
    ReversalState.PENDING: frozenset(ReversalState),
    ReversalState.CREDENTIALS_REJECTED: frozenset(
        {ReversalState.CREDENTIALS_REJECTED, ReversalState.PENDING}
    ),
    ReversalState.REFUNDED: frozenset({ReversalState.REFUNDED}),
    ReversalState.REFUSED: frozenset({ReversalState.REFUSED}),
}


def can_move_reversal(old: ReversalState, new: ReversalState) -> bool:
    """True when a reversal may move from `old` to `new`."""
    return new in REVERSAL_TRANSITIONS.get(old, frozenset())


# --- the facts the decisions take (the `*_sql` modules read and write them) ------------

#: how an intent's transaction was proven (`qrpos.ledger.claims`)
Proof = Literal["reply", "history", "review"]


class IntentChanges(TypedDict, total=False):
    """The columns a move may change, with their types: every transition is typed."""

    token: str | None
    state: IntentState
    charged: int | None
    first_sent_at: float | None
    last_sent_at: float | None
    last_end_at: float | None
    attempts: int
    in_flight: int
    maybe_sent: int
    may_resend: int
    next_try_at: float | None
    clock_skew_s: float | None
    last_status: int | None
    #: the sale's last word for a person: kept as English (`last_detail`) and as the
    #: `Said` (`detail_said`) by `sales_sql.update_intent`
    last_detail: Said | None
    decline_code: str | None
    if_absent: str | None
    lookups: int
    last_lookup_at: float | None
    tx_id: str | None
    tx_json: str | None
    watching: int
    resolved_at: float | None
    last_unclear_end_at: float | None
    proof: Proof | None
    skew_lo_s: float | None
    skew_hi_s: float | None
    answered_lookups: int
    unclear_end_boot: str | None
    unclear_end_up: float | None
    matched_at: float | None
    matched_sends: int | None
    confirms_undelivered: int
    first_sent_boot: str | None
    first_sent_up: float | None
    username: str | None
    probed_to: float | None


@dataclass(frozen=True)
class IntentRow:
    """One `charge_intent` row."""

    id: int
    idem_key: str
    token: str | None
    token_sha256: str
    token_tail: str
    amount_mnt: int
    state: IntentState
    charged: int | None
    created_at: float
    first_sent_at: float | None
    last_sent_at: float | None
    last_end_at: float | None
    attempts: int
    in_flight: int
    maybe_sent: int
    may_resend: int
    next_try_at: float | None
    clock_skew_s: float | None
    last_status: int | None
    last_detail: str | None
    decline_code: str | None
    if_absent: str | None
    lookups: int
    last_lookup_at: float | None
    tx_id: str | None
    tx_json: str | None
    watching: int
    resolved_at: float | None
    last_unclear_end_at: float | None
    proof: Proof | None
    skew_lo_s: float | None
    skew_hi_s: float | None
    answered_lookups: int
    unclear_end_boot: str | None
    unclear_end_up: float | None
    #: when a look-up first found a unique history match while the key could still be
    #: sent: the key is sent once more before the match may prove anything (lookup.py)
    matched_at: float | None = None
    #: the first send's step-proof stamp (boot id, CLOCK_BOOTTIME): the resend horizon and
    #: the absence ceiling count real seconds from it (`qrpos.ledger.timing`)
    first_sent_boot: str | None = None
    first_sent_up: float | None = None
    #: the pairing (terminal username) the sale was sent under: a new pairing is a new
    #: terminal, whose key space and history this sale is not in
    username: str | None = None
    #: `last_detail` as words for a person in any language (`qrpos.said`, JSON)
    detail_said: str | None = None
    #: the sends (`attempts`) when that match was found: the next send, and only it, is
    #: the confirming one (a count, which no step of the wall clock moves)
    matched_sends: int | None = None
    #: unused since issue 47 (the key stays owed while it may be sent, `timing.match_rule`);
    #: the column of migration 15 stays, so older outboxes open unchanged
    confirms_undelivered: int = 0
    #: the service's `Date` (epoch seconds on its clock) at the first look-up after late
    #: commits had `settle_s` whose probe found no row stamped ahead of it: every commit
    #: of the sale is stamped at or before it, even at a high-water mark of a service clock
    #: that went back before the kiosk ever asked (`windows.window_for`; issue 47, seed
    #: 201758). None until then, and again after each send of the key
    probed_to: float | None = None

    @property
    def is_open(self) -> bool:
        """Blocks a new sale: the resolver still has to resolve it (`is_open`)."""
        return is_open(self.state, self.charged)


@dataclass(frozen=True)
class ReversalRow:
    """One `reversal` row."""

    id: int
    tx_id: str
    intent_id: int | None
    amount_mnt: int | None
    reason: str
    state: ReversalState
    created_at: float
    attempts: int
    next_try_at: float | None
    last_status: int | None
    message: str | None
    resolved_at: float | None
    #: `message` as words for a person in any language (`qrpos.said`, JSON)
    message_said: str | None = None


class ReversalChanges(TypedDict, total=False):
    """The columns a reversal's move may change, with their types."""

    state: ReversalState
    attempts: int
    next_try_at: float | None
    last_status: int | None
    #: the refund's last word: kept as English (`message`) and as the `Said`
    #: (`message_said`) by `refunds_sql.update_reversal`
    message: Said | None
    resolved_at: float | None
    #: a refund by hand of a row no sale holds learns its amount from the history
    #: (`reversals.price_from_history`)
    amount_mnt: int | None


#: what a 429 and a 401 leave as a sale's or a refund's last word
RATE_LIMITED: Final = say("unclear.rate_limited", "rate limited (429)")
REPAIR_NEEDED: Final = say(
    "sale.credentials_rejected", "credentials rejected (401): re-pair the terminal"
)


@dataclass(frozen=True)
class Moment:
    """ "Now", as the caller read it: the wall clock and the step-proof boot clock."""

    #: UTC epoch seconds (the wall clock; NTP steps it)
    wall: float
    #: this boot's id (None where the system does not tell)
    boot: str | None = None
    #: CLOCK_BOOTTIME seconds on this boot (None without a boot id)
    up: float | None = None
