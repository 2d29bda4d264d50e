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
       │    ──cashier gives up─────────────────▶ abandoned
    unresolved ──201 on a retry (same key)─────▶ approved (or needs_review if it mismatches)
       │    ──422/4xx/409 when no attempt was
       │      unclear (only 429s, refused
       │      connections) ────────────────────▶ declined / refused / token_used
       │    ──history: proof (unique both ways)▶ charged_per_history
       │    ──history: contested or ambiguous,
       │      or another install is active────▶ needs_review
       │    ──history: nothing, on a measured
       │      clock, after late commits settled
       │      (and a same-key answer, or the
       │      ceiling for a silent service)───▶ not_charged / declined / refused
       │    ──401──────────────────────────────▶ credentials_rejected
       │    ──cashier gives up─────────────────▶ abandoned
    credentials_rejected ──re-paired, resolve──▶ unresolved (history lookups only)
    abandoned ──history: proof─────────────────▶ (refund queued) reversed_after_abandon
       │      ──contested or ambiguous─────────▶ needs_review
    needs_review ──owner: "this row is it"─────▶ charged_per_review
       │      ──owner: "refund this row"───────▶ refunded_per_review (refund queued)
       │      ──owner: "nothing was charged"───▶ not_charged
       (abandon leaves a review in review: abandon stops the till's wait, never the question)

`pending`, `unresolved` and an open `credentials_rejected` (one whose earlier attempt
may have reached the service) block a new sale. Every other state is kept for audit.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class IntentState(StrEnum):
    """Where a charge intent stands. Values are stored in the outbox and shown in JSON."""

    #: stored; the first request is about to go out or is in flight
    PENDING = "pending"
    #: 201: charged, the transaction is stored
    APPROVED = "approved"
    #: 422: the service declined it; nothing was charged
    DECLINED = "declined"
    #: another 4xx (400, 403, 404, …): stopped; nothing was charged
    REFUSED = "refused"
    #: 409 on a clean first answer: the customer's QR token was already spent
    TOKEN_USED = "token_used"  # noqa: S105 - a state name, not a secret
    #: 401: stopped until the terminal is re-paired; the row is kept
    CREDENTIALS_REJECTED = "credentials_rejected"
    #: an attempt may have reached the service without an answer; the resolver works on it
    UNRESOLVED = "unresolved"
    #: the history shows exactly one matching charge: it is ours
    CHARGED_PER_HISTORY = "charged_per_history"
    #: past the horizon the history shows no matching charge
    NOT_CHARGED = "not_charged"
    #: the history shows two or more candidates: a person must decide, never a guess
    NEEDS_REVIEW = "needs_review"
    #: the cashier gave up; never sent again (the history is still watched)
    ABANDONED = "abandoned"
    #: abandoned, later found charged in the history, and refunded automatically
    REVERSED_AFTER_ABANDON = "reversed_after_abandon"
    #: a person settled the review: this history row is this sale (the customer paid)
    CHARGED_PER_REVIEW = "charged_per_review"
    #: a person settled the review: the row was charged wrongly and is refunded (queued)
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
#: states after which nothing more happens automatically
FINAL_STATES: Final = frozenset(
    {
        IntentState.APPROVED,
        IntentState.DECLINED,
        IntentState.REFUSED,
        IntentState.TOKEN_USED,
        IntentState.CHARGED_PER_HISTORY,
        IntentState.NOT_CHARGED,
        IntentState.NEEDS_REVIEW,
        IntentState.REVERSED_AFTER_ABANDON,
        IntentState.CHARGED_PER_REVIEW,
        IntentState.REFUNDED_PER_REVIEW,
    }
)

#: every legal move; the store refuses any other (a bug must not corrupt the audit trail)
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
}


def can_move(old: IntentState, new: IntentState) -> bool:
    """True when the state machine allows `old` → `new`."""
    return new in TRANSITIONS.get(old, frozenset())
