"""The durable SQLite outbox: charge and reversal intents, the resolver, recovery.

See `qrpos.ledger.claims` for when a sale counts as charged (proof, reviews, absence),
`qrpos.ledger.states` for the state machine and `ChargeDesk` for the entry points.
"""

from typing import TYPE_CHECKING

from qrpos.lazy import lazy_exports

if TYPE_CHECKING:
    from qrpos.ledger.desk import ChargeDesk
    from qrpos.ledger.failures import LedgerError
    from qrpos.ledger.listing import outbox_audit, outbox_views
    from qrpos.ledger.money import Money, is_sold, money_of
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
    from qrpos.ledger.states import CHARGED_STATES, IntentState, ReversalState
    from qrpos.ledger.store import Ledger
    from qrpos.ledger.views import (
        AmountOutOfRange,
        AttemptView,
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
    "AmountOutOfRange",
    "AttemptView",
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
    "Money",
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
    "is_sold",
    "money_of",
    "outbox_audit",
    "outbox_views",
    "recorded_foreign_activity",
    "review_views",
]

#: where each export lives: its module is loaded when the name is first read
_WHERE = {
    "AmountOutOfRange": ".views",
    "AttemptView": ".views",
    "CHARGED_STATES": ".states",
    "ChargeDesk": ".desk",
    "ChargeRefusedLocally": ".views",
    "ForeignActivity": ".reviews",
    "IntentState": ".states",
    "IntentView": ".views",
    "InvalidToken": ".views",
    "Ledger": ".store",
    "LedgerError": ".failures",
    "LedgerUnhealthy": ".views",
    "MarkCharged": ".reviews",
    "MarkNotCharged": ".reviews",
    "Money": ".money",
    "is_sold": ".money",
    "money_of": ".money",
    "OutboxBusy": ".views",
    "RefundRow": ".reviews",
    "RetryPolicy": ".policy",
    "ReversalResult": ".views",
    "ReversalState": ".states",
    "ReviewCandidate": ".reviews",
    "ReviewDecision": ".reviews",
    "ReviewRefused": ".reviews",
    "ReviewView": ".reviews",
    "SaleProgress": ".views",
    "SaleResult": ".views",
    "TokenAlreadyPaid": ".views",
    "TokenInReview": ".views",
    "UnknownIntent": ".views",
    "UnresolvedChargeExists": ".views",
    "outbox_audit": ".listing",
    "outbox_views": ".listing",
    "recorded_foreign_activity": ".reviews",
    "review_views": ".reviews",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
