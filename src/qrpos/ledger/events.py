"""What moves a sale or a refund: the events, the effects, the review reasons, a move's
shape (the states themselves are `qrpos.ledger.states`).

The vocabulary of the ledger's table of moves (`qrpos.ledger.moves`); pure, like it, and
imports nothing of the ledger. Review reasons are stored in the outbox: their values
never change.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from qrpos.errors import QrposError


class ReviewReason(StrEnum):
    """Why a person is asked to settle a sale (stored in `review.reason` as the value)."""

    #: more rows than sales could account for, or a pairing leaves the sale without a row
    AMBIGUOUS_HISTORY = "ambiguous_history"
    #: a pairing gives the sale's only candidate to another sale
    CONTESTED_ROW = "contested_row"
    #: a 201 that does not fit the request, or is owned or known as something else
    REPLY_MISMATCH = "reply_mismatch"
    #: the sale's only row is already reversed, or is being refunded by hand
    REVERSED_ROW = "reversed_row"
    #: another install uses these credentials
    FOREIGN_ACTIVITY = "foreign_activity"
    #: nothing was found, but the service's clock at the time of the sale is unknown
    UNMEASURED_CLOCK = "unmeasured_clock"
    #: a same-key retry got 409 after an unclear attempt, and no row proves a charge
    UNVERIFIED_CONFLICT = "unverified_conflict"
    #: the sale went out under a pairing the kiosk no longer has
    OTHER_TERMINAL = "other_terminal"
    #: the customer was charged (proven) and the service refused the refund
    REFUND_REFUSED = "refund_refused"
    #: the history's window pairs a row with the sale, but its own key never confirmed it
    #: and may no longer be sent: the row may be another install's (issue 47)
    UNCONFIRMED_ROW = "unconfirmed_row"


class Charged(StrEnum):
    """What a move says about `charged`: the customer paid, did not, is not known, or as it was."""

    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"
    KEEP = "keep"


class Effect(StrEnum):
    """What the driver does after committing a move."""

    #: send the charge with the sale's key
    SEND = "send"
    #: read the sale's window of the history
    LOOK_UP = "look_up"
    #: queue a refund of the sale's row and send it
    REFUND = "refund"
    #: open (or replace) the sale's review, with the move's reason
    OPEN_REVIEW = "open_review"
    #: wait until a boot-clock instant (`timing.wait_for`, the one bounded wait), then ask again
    WAIT = "wait"
    #: the cashier (or the CLI) gets its answer now: the till is not held for this sale.
    #: Carried out by the drive, which holds the till while the sale is open and returns
    #: it the moment it is not, or at the deadline (a test holds every cell to that rule)
    ANSWER_CASHIER = "answer_cashier"
    #: keep reading the history of an abandoned sale
    WATCH = "watch"
    #: stop reading it
    STOP_WATCHING = "stop_watching"


class SaleEvent(StrEnum):
    """The facts that move a sale."""

    # a reply to a send of the key (`reply_event`)
    REPLY_APPROVED = "reply_approved"
    REPLY_MISMATCH = "reply_mismatch"
    REPLY_UNCLEAR = "reply_unclear"
    REPLY_NOT_DELIVERED = "reply_not_delivered"
    REPLY_DECLINED = "reply_declined"
    REPLY_REFUSED = "reply_refused"
    REPLY_TOKEN_USED = "reply_token_used"  # noqa: S105 - an event name, not a secret
    REPLY_CREDENTIALS_REJECTED = "reply_credentials_rejected"
    DECLINED_AFTER_UNCLEAR = "declined_after_unclear"
    REFUSED_AFTER_UNCLEAR = "refused_after_unclear"
    CONFLICT_AFTER_UNCLEAR = "conflict_after_unclear"
    REJECTED_AFTER_UNCLEAR = "rejected_after_unclear"
    # a look-up's verdict (`verdict_event`)
    LOOKUP_PROVEN = "lookup_proven"
    LOOKUP_MATCH_TO_CONFIRM = "lookup_match_to_confirm"
    #: proven on a row a refund made by hand holds, queued or landed (`proven_event`)
    LOOKUP_PROVEN_REFUNDED_ROW = "lookup_proven_refunded_row"
    LOOKUP_AMBIGUOUS = "lookup_ambiguous"
    LOOKUP_CONTESTED = "lookup_contested"
    LOOKUP_REVERSED_ROW = "lookup_reversed_row"
    LOOKUP_FOREIGN = "lookup_foreign"
    LOOKUP_UNCONFIRMED = "lookup_unconfirmed"
    LOOKUP_DISPUTED_UNSETTLED = "lookup_disputed_unsettled"
    LOOKUP_ABSENT = "lookup_absent"
    LOOKUP_ABSENT_AFTER_DECLINE = "lookup_absent_after_decline"
    LOOKUP_ABSENT_AFTER_REFUSAL = "lookup_absent_after_refusal"
    LOOKUP_ABSENT_AFTER_CONFLICT = "lookup_absent_after_conflict"
    LOOKUP_UNMEASURED = "lookup_unmeasured"
    LOOKUP_NOT_YET = "lookup_not_yet"
    LOOKUP_FAILED = "lookup_failed"
    LOOKUP_CREDENTIALS_REJECTED = "lookup_credentials_rejected"
    # the cashier
    ABANDON_UNCLEAR = "abandon_unclear"
    ABANDON_CLEAN = "abandon_clean"
    # a person's decision on a review (`decision_event`)
    DECIDE_CHARGED = "decide_charged"
    DECIDE_REFUND = "decide_refund"
    DECIDE_NOT_CHARGED = "decide_not_charged"
    DECIDE_NOT_CHARGED_WHEN_PROVEN = "decide_not_charged_when_proven"
    # the answer to the refund of this sale's row (`refund_event`)
    SALE_REFUNDED = "sale_refunded"
    SALE_REFUND_REFUSED = "sale_refund_refused"
    # time passing, and the drive's own facts
    SEND_DUE = "send_due"
    LOOKUP_DUE = "lookup_due"
    NEVER_DELIVERED = "never_delivered"
    INTERRUPTED = "interrupted"
    OTHER_PAIRING = "other_pairing"
    REPAIRED = "repaired"
    DEADLINE = "deadline"


class RefundEvent(StrEnum):
    """The facts that move a refund."""

    SEND_DUE = "send_due"
    ANSWER_REFUNDED = "answer_refunded"
    ANSWER_ALREADY_REVERSED = "answer_already_reversed"
    ANSWER_UNEXPECTED_2XX = "answer_unexpected_2xx"
    ANSWER_UNCLEAR = "answer_unclear"
    ANSWER_RATE_LIMITED = "answer_rate_limited"
    ANSWER_REFUSED = "answer_refused"
    ANSWER_CREDENTIALS_REJECTED = "answer_credentials_rejected"
    REPAIRED = "repaired"


@dataclass(frozen=True)
class Move:
    """A cell's answer: go to `next`, say this of `charged`, carry out `effects`."""

    #: a sale's `IntentState` or a refund's `ReversalState` (the table says which)
    next: StrEnum
    effects: tuple[Effect, ...] = ()
    charged: Charged = Charged.KEEP
    #: the reason of the review that `Effect.OPEN_REVIEW` opens
    review: ReviewReason | None = None


@dataclass(frozen=True)
class Refusal:
    """A cell's answer: this event cannot happen in this state, and why."""

    reason: str


class IllegalMove(QrposError, RuntimeError):
    """The driver asked for a cell that is a `Refusal`: a bug, or a stale caller."""


Cell = Move | Refusal
