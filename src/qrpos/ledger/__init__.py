"""The durable SQLite outbox: charge and reversal intents, the resolver, recovery.

See `qrpos.ledger.claims` for when a sale counts as charged (proof, reviews, absence),
`qrpos.ledger.states` for the state machine and `ChargeDesk` for the entry points.
"""

from typing import TYPE_CHECKING

from qrpos.lazy import lazy_exports

if TYPE_CHECKING:
    from qrpos.ledger.desk import ChargeDesk
    from qrpos.ledger.failures import LedgerError
    from qrpos.ledger.listing import outbox_audit, outbox_views, refunded_here
    from qrpos.ledger.money import Money, is_sold, money_of
    from qrpos.ledger.policy import RetryPolicy
    from qrpos.ledger.review_reads import (
        ForeignActivity,
        ReviewCandidate,
        ReviewView,
        recorded_foreign_activity,
        review_views,
    )
    from qrpos.ledger.reviews import (
        MarkCharged,
        MarkNotCharged,
        RefundRow,
        ReviewDecision,
        ReviewRefused,
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
    "refunded_here",
    "review_views",
]

#: where each export lives: its module is loaded when the name is first read
_WHERE = {
    "AmountOutOfRange": ".views",
    "AttemptView": ".views",
    "CHARGED_STATES": ".states",
    "ChargeDesk": ".desk",
    "ChargeRefusedLocally": ".views",
    "ForeignActivity": ".review_reads",
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
    "ReviewCandidate": ".review_reads",
    "ReviewDecision": ".reviews",
    "ReviewRefused": ".reviews",
    "ReviewView": ".review_reads",
    "SaleProgress": ".views",
    "SaleResult": ".views",
    "TokenAlreadyPaid": ".views",
    "TokenInReview": ".views",
    "UnknownIntent": ".views",
    "UnresolvedChargeExists": ".views",
    "outbox_audit": ".listing",
    "outbox_views": ".listing",
    "refunded_here": ".listing",
    "recorded_foreign_activity": ".review_reads",
    "review_views": ".review_reads",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
