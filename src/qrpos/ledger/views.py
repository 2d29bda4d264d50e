"""What the outbox tells its callers: results, progress, list rows, local refusals."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from qrpos.errors import QrposError
from qrpos.ledger.failures import DamagedRow
from qrpos.ledger.money import Money, is_sold, money_of
from qrpos.ledger.states import IntentRow, IntentState, ReversalRow, ReversalState, is_open
from qrpos.said import Said, say
from qrpos.service import Transaction, format_rfc3339
from qrpos.service.models import MalformedResponse, transaction_from_json_text


class ChargeRefusedLocally(QrposError):
    """A charge refused before anything was stored or sent; the message is for the cashier."""


class UnresolvedChargeExists(ChargeRefusedLocally):
    """An earlier charge is still unresolved: settle it (resolve or abandon) first."""

    def __init__(self, intent_id: int, amount_mnt: int) -> None:
        super().__init__(
            say(
                "error.unresolved_exists",
                "charge #{intent} of {amount} MNT is still unresolved; resolve it "
                "(qrpos outbox resolve) or abandon it before a new sale",
                intent=intent_id,
                amount=amount_mnt,
            )
        )
        self.intent_id = intent_id
        self.amount_mnt = amount_mnt


class TokenAlreadyPaid(ChargeRefusedLocally):
    """The code already paid for a sale of this kiosk (the service retires a token at its
    first charge): nothing is sent. Charging it again could only be refused, and a kiosk
    that "resumed" that sale would show an approval for a sale nobody paid."""

    def __init__(self, intent_id: int, amount_mnt: int, tx_id: str) -> None:
        super().__init__(
            say(
                "error.token_already_paid",
                "this code already paid for charge #{intent} of {amount} MNT (transaction "
                "{tx}); nothing was charged now: ask the customer to refresh the pass",
                intent=intent_id,
                amount=amount_mnt,
                tx=tx_id,
            )
        )
        self.intent_id = intent_id
        self.amount_mnt = amount_mnt
        self.tx_id = tx_id


class TokenInReview(ChargeRefusedLocally):
    """The code's earlier sale in this outbox may have paid and waits for a person's review:
    nothing is sent. A new sale with a new key could only meet 409 `qr token already used`
    (the earlier charge) and be read as "not charged", and the customer asked to pay again."""

    def __init__(self, intent_id: int, amount_mnt: int) -> None:
        super().__init__(
            say(
                "error.token_in_review",
                "this code's charge #{intent} of {amount} MNT may have been paid and waits "
                "for the owner's review (qrpos outbox review); nothing was charged now",
                intent=intent_id,
                amount=amount_mnt,
            )
        )
        self.intent_id = intent_id
        self.amount_mnt = amount_mnt


class AmountOutOfRange(ChargeRefusedLocally):
    """The amount is not a whole number of tugrik between 1 and 1,000,000."""


class InvalidToken(ChargeRefusedLocally):
    """The token is empty or not a string; nothing was sent."""


class LedgerUnhealthy(ChargeRefusedLocally):
    """The outbox failed its integrity check at open: no new charge is possible."""


class OutboxBusy(ChargeRefusedLocally):
    """Another qrpos process is working on the outbox right now."""


class UnknownIntent(QrposError, LookupError):
    """No charge intent has that id."""


@dataclass(frozen=True)
class SaleResult:
    """Where a sale stands after a call. `charged`: True, False, or None (not yet known)."""

    intent_id: int
    state: IntentState
    amount_mnt: int
    transaction: Transaction | None
    decline_code: str | None
    message: str | None
    charged: bool | None
    #: `message` in words for any language (`qrpos.said`), when the outbox kept them
    message_said: Said | None = None
    #: a refund of its row landed (the outbox's reversal of its transaction, refunded):
    #: with `state` and `charged`, where its money stands (`money`)
    refunded: bool = False

    @property
    def money(self) -> Money:
        """Where the sale's money stands: the ledger's one definition (`money_of`)."""
        return money_of(self.state, self.charged, self.refunded)

    @property
    def sold(self) -> bool:
        """Charged and kept (`is_sold`): what the till's "paid" screen and a receipt say."""
        return is_sold(self.state, self.charged, self.refunded)

    @property
    def is_open(self) -> bool:
        """True while the resolver still has work on this sale (it blocks a new one)."""
        return is_open(self.state, self.charged)


Phase = Literal["sending", "retrying", "backing_off", "checking_history"]


@dataclass(frozen=True)
class SaleProgress:
    """A step of the resolver, for a "checking…" screen; never carries the token."""

    intent_id: int
    phase: Phase
    attempt: int
    elapsed_s: float
    detail: str


@dataclass(frozen=True)
class ReversalResult:
    """Where a refund stands: refunded, refused, credentials_rejected or unresolved."""

    tx_id: str
    state: Literal["refunded", "refused", "credentials_rejected", "unresolved"]
    message: str
    #: the service's last HTTP status for this refund (None: refused locally / no answer);
    #: callers branch on it, never on the message text
    status: int | None = None
    #: `message` in words for any language (`qrpos.said`), when the queue kept them
    said: Said | None = None

    @classmethod
    def from_row(cls, row: ReversalRow) -> ReversalResult:
        """Where a stored reversal stands."""
        return cls.from_state(
            row.tx_id,
            row.state,
            row.message or "",
            row.last_status,
            Said.from_json(row.message_said),
        )

    @classmethod
    def from_state(
        cls,
        tx_id: str,
        state: ReversalState,
        message: str,
        status: int | None = None,
        said: Said | None = None,
    ) -> ReversalResult:
        """Map a stored reversal state to the result shown to callers."""
        shown: dict[
            ReversalState, Literal["refunded", "refused", "credentials_rejected", "unresolved"]
        ] = {
            ReversalState.REFUNDED: "refunded",
            ReversalState.REFUSED: "refused",
            ReversalState.CREDENTIALS_REJECTED: "credentials_rejected",
            ReversalState.PENDING: "unresolved",
        }
        return cls(tx_id=tx_id, state=shown[state], message=message, status=status, said=said)


@dataclass(frozen=True)
class IntentView:
    """One row of `qrpos outbox list`: a charge intent or a reversal.

    `token` is the last four characters only; `charged` for a reversal is False once
    refunded and None before.
    """

    id: str
    kind: Literal["charge", "reversal"]
    amount_mnt: int | None
    state: str
    charged: bool | None
    transaction_id: str | None
    token: str | None
    created_at: datetime
    detail: str | None = None
    attempts: int = 0
    #: `detail` in words for any language (`qrpos.said`), when the outbox kept them
    detail_said: Said | None = None
    #: the service's time of the sale's row when the service answered with it (the 201's
    #: `createdAt`): where the sale falls in a day, whatever the kiosk's clock said
    service_at: datetime | None = None
    #: the pairing (terminal username) the sale went out under (None: before it was kept)
    username: str | None = None
    #: a sale's money (`money.money_of`, with its row's landed refund): "charged",
    #: "refunded", "not_charged" or "unknown"; None for a reversal. `charged` says whether
    #: the charge happened; this says where the customer's money stands now
    money: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The outbox JSON object of docs/architecture.md."""
        return {
            "id": self.id,
            "kind": self.kind,
            "amountMNT": self.amount_mnt,
            "state": self.state,
            "charged": self.charged,
            "money": self.money,
            "transactionID": self.transaction_id,
            "token": self.token,
            "createdAt": format_rfc3339(self.created_at.astimezone(UTC)),
        }


@dataclass(frozen=True)
class AttemptView:
    """One line of a sale's or refund's audit trail: a request sent, a history look-up, a
    person's review. `detail` is the ledger's own English note (never a full token)."""

    kind: str
    n: int
    sent_at: datetime
    outcome: str
    status: int | None = None
    elapsed_s: float | None = None
    detail: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> AttemptView:
        """From a row `service_sql.attempts_of` read (its values already checked)."""
        return cls(
            kind=row["kind"],
            n=row["n"],
            sent_at=datetime.fromtimestamp(row["sent_at"], UTC),
            outcome=row["outcome"],
            status=row["status"],
            elapsed_s=row["elapsed_s"],
            detail=row["detail"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "n": self.n,
            "sentAt": format_rfc3339(self.sent_at),
            "status": self.status,
            "outcome": self.outcome,
            "elapsedSeconds": self.elapsed_s,
            "detail": self.detail,
        }


def sale_result(row: IntentRow, refunded: bool = False) -> SaleResult:
    """The caller's view of an intent row; `refunded`: a refund of its row landed."""
    tx: Transaction | None = None
    if row.tx_json:
        try:
            tx = transaction_from_json_text(row.tx_json)
        except MalformedResponse as exc:
            raise DamagedRow(
                f"a damaged row: sale #{row.id}'s transaction cannot be read ({exc})"
            ) from None
    return SaleResult(
        intent_id=row.id,
        state=row.state,
        amount_mnt=row.amount_mnt,
        transaction=tx,
        decline_code=row.decline_code,
        message=row.last_detail,
        charged=None if row.charged is None else bool(row.charged),
        message_said=Said.from_json(row.detail_said),
        refunded=refunded,
    )


def intent_view(row: IntentRow, refunded: bool = False) -> IntentView:
    """A charge intent as a row of `qrpos outbox list`; `refunded`: a refund of its row
    landed (the outbox's reversal of its `tx_id`, refunded)."""
    return IntentView(
        id=str(row.id),
        kind="charge",
        amount_mnt=row.amount_mnt,
        state=str(row.state),
        charged=None if row.charged is None else bool(row.charged),
        transaction_id=row.tx_id,
        token=row.token_tail,
        created_at=datetime.fromtimestamp(row.created_at, UTC),
        detail=row.last_detail,
        attempts=row.attempts,
        detail_said=Said.from_json(row.detail_said),
        service_at=_service_at(row),
        username=row.username,
        money=money_of(row.state, row.charged, refunded).value,
    )


def _service_at(row: IntentRow) -> datetime | None:
    """The service's `createdAt` of the sale's row, when the outbox kept it readable."""
    if not row.tx_json:
        return None
    try:
        return transaction_from_json_text(row.tx_json).created_at
    except MalformedResponse:
        return None  # a damaged row is named where it is read for money (`sale_result`)


def reversal_view(row: ReversalRow) -> IntentView:
    """A reversal as a row of `qrpos outbox list` (id prefixed `r`)."""
    return IntentView(
        id=f"r{row.id}",
        kind="reversal",
        amount_mnt=row.amount_mnt,
        state=str(row.state),
        # given back once it landed; a refused refund moved nothing, and whether the
        # customer is still charged is its sale's to say (`money`), not the refund's (a
        # later refund of the row may have landed; a mistyped id was never a charge)
        charged=False if row.state is ReversalState.REFUNDED else None,
        transaction_id=row.tx_id,
        token=None,
        created_at=datetime.fromtimestamp(row.created_at, UTC),
        detail=row.message,
        attempts=row.attempts,
        detail_said=Said.from_json(row.message_said),
    )
