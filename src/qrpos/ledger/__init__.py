"""The durable SQLite outbox: charge and reversal intents, the resolver, recovery.

See `qrpos.ledger.claims` for when a sale counts as charged (proof, reviews, absence),
`qrpos.ledger.states` for the state machine and `ChargeDesk` for the entry points.
"""

from qrpos.ledger.desk import ChargeDesk
from qrpos.ledger.listing import outbox_views
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.reviews import (
    ForeignActivity,
    MarkCharged,
    MarkNotCharged,
    RefundRow,
    ReviewCandidate,
    ReviewDecision,
    ReviewRefused,
    ReviewView,
    recorded_foreign_activity,
    review_views,
)
from qrpos.ledger.states import CHARGED_STATES, FINAL_STATES, IntentState, ReversalState
from qrpos.ledger.store import Ledger, LedgerError
from qrpos.ledger.views import (
    AmountOutOfRange,
    ChargeRefusedLocally,
    IntentView,
    InvalidToken,
    LedgerUnhealthy,
    OutboxBusy,
    ReversalResult,
    SaleProgress,
    SaleResult,
    TokenAlreadyPaid,
    TokenInReview,
    UnknownIntent,
    UnresolvedChargeExists,
)

__all__ = [
    "CHARGED_STATES",
    "FINAL_STATES",
    "AmountOutOfRange",
    "ChargeDesk",
    "ChargeRefusedLocally",
    "ForeignActivity",
    "IntentState",
    "IntentView",
    "InvalidToken",
    "Ledger",
    "LedgerError",
    "LedgerUnhealthy",
    "MarkCharged",
    "MarkNotCharged",
    "OutboxBusy",
    "RefundRow",
    "RetryPolicy",
    "ReversalResult",
    "ReversalState",
    "ReviewCandidate",
    "ReviewDecision",
    "ReviewRefused",
    "ReviewView",
    "SaleProgress",
    "SaleResult",
    "TokenAlreadyPaid",
    "TokenInReview",
    "UnknownIntent",
    "UnresolvedChargeExists",
    "outbox_views",
    "recorded_foreign_activity",
    "review_views",
]
