"""Reconciliation of a day's history against the terminal's own ledger.

Three questions, each answered with a count and the first few cases:

- approved locally but missing on the service (a charge the ledger holds as taken,
  with a transaction id the service's history for the day does not show);
- on the service but unknown locally (a charge in the history that no local intent
  claims, e.g. taken by another install of this terminal or lost from the ledger);
- unresolved (an intent whose outcome is not known yet: the owner must look at it).

The service's commit time and the ledger's local time may straddle midnight, so the
comparison sees a margin either side of the day; only cases inside the day are reported.
Memory grows with the ledger's intents of the day, never with the service's rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from qrpos.reports.localday import in_window
from qrpos.service.models import Transaction, format_rfc3339

#: how far beyond the day the two sides are compared, for clock skew and commit delay
MARGIN = timedelta(minutes=10)
#: cases kept per category for display; the counts are always complete
EXAMPLES_KEPT = 20


@dataclass(frozen=True)
class LocalCharge:
    """What reconciliation needs of one charge intent of the local ledger."""

    intent_id: str
    amount_mnt: int
    state: str
    #: True charged, False not charged, None not known yet (unresolved)
    charged: bool | None
    transaction_id: str | None
    created_at: datetime
    #: sent under the pairing whose history is compared (a sale of an earlier pairing is
    #: in another terminal's history: never "missing" from this one's, still unresolved
    #: while its outcome is not known)
    here: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.intent_id,
            "amountMNT": self.amount_mnt,
            "state": self.state,
            "charged": self.charged,
            "transactionID": self.transaction_id,
            "createdAt": format_rfc3339(self.created_at),
        }


@dataclass(frozen=True)
class ServiceOnlyCharge:
    """A row of the service's history that no local intent claims."""

    transaction_id: str
    amount_mnt: int
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "transactionID": self.transaction_id,
            "amountMNT": self.amount_mnt,
            "createdAt": format_rfc3339(self.created_at),
        }


@dataclass(frozen=True)
class Reconciliation:
    """The three lists (counts complete, examples capped at `EXAMPLES_KEPT`)."""

    matched: int
    missing_on_service: tuple[LocalCharge, ...]
    unknown_locally_count: int
    unknown_locally: tuple[ServiceOnlyCharge, ...]
    unresolved: tuple[LocalCharge, ...]

    @property
    def clean(self) -> bool:
        """Nothing for the owner to look at."""
        return not (self.missing_on_service or self.unknown_locally_count or self.unresolved)

    def to_json(self) -> dict[str, Any]:
        return {
            "matched": self.matched,
            "missingOnService": {
                "count": len(self.missing_on_service),
                "items": [c.to_json() for c in self.missing_on_service],
            },
            "unknownLocally": {
                "count": self.unknown_locally_count,
                "items": [c.to_json() for c in self.unknown_locally],
            },
            "unresolved": {
                "count": len(self.unresolved),
                "items": [c.to_json() for c in self.unresolved],
            },
        }


@dataclass
class Reconciler:
    """Compares the service's rows, fed one by one, with the ledger's charges."""

    from_utc: datetime
    to_utc: datetime
    local: Iterable[LocalCharge]
    _expected: dict[str, LocalCharge] = field(init=False, default_factory=dict)
    _known_ids: set[str] = field(init=False, default_factory=set)
    _unresolved: list[LocalCharge] = field(init=False, default_factory=list)
    _unknown: list[ServiceOnlyCharge] = field(init=False, default_factory=list)
    _unknown_count: int = field(init=False, default=0)
    _matched: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        for charge in self.local:
            if charge.transaction_id:
                self._known_ids.add(charge.transaction_id)
            inside = in_window(charge.created_at, self.from_utc, self.to_utc)
            if charge.charged is None or (charge.charged and not charge.transaction_id):
                # not known yet; or charged on a row the kiosk cannot name (a person's
                # review: a row refunded by hand, the owner to choose): the owner is told
                if inside:
                    self._unresolved.append(charge)
            elif charge.charged and charge.transaction_id and inside and charge.here:
                self._expected[charge.transaction_id] = charge

    @property
    def fetch_window(self) -> tuple[datetime, datetime]:
        """The window of the service's history to feed: the day plus the margin."""
        return self.from_utc - MARGIN, self.to_utc + MARGIN

    def observe(self, tx: Transaction) -> None:
        """Account for one row of the service's history."""
        if not tx.is_charge:
            return
        if self._expected.pop(tx.id, None) is not None:
            self._matched += 1
            return
        if tx.id in self._known_ids:
            return
        if in_window(tx.created_at, self.from_utc, self.to_utc):
            self._unknown_count += 1
            if len(self._unknown) < EXAMPLES_KEPT:
                self._unknown.append(
                    ServiceOnlyCharge(
                        transaction_id=tx.id, amount_mnt=tx.amount_mnt, created_at=tx.created_at
                    )
                )

    def result(self) -> Reconciliation:
        """The comparison once every row of `fetch_window` has been observed."""
        missing = sorted(self._expected.values(), key=lambda c: c.created_at)
        return Reconciliation(
            matched=self._matched,
            missing_on_service=tuple(missing),
            unknown_locally_count=self._unknown_count,
            unknown_locally=tuple(self._unknown),
            unresolved=tuple(sorted(self._unresolved, key=lambda c: c.created_at)),
        )


class IntentLike(Protocol):
    """The fields of the ledger's `IntentView` reconciliation reads (structural, so the
    reports layer does not import the ledger)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def amount_mnt(self) -> int | None: ...
    @property
    def state(self) -> str: ...
    @property
    def charged(self) -> bool | None: ...
    @property
    def transaction_id(self) -> str | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def service_at(self) -> datetime | None: ...
    @property
    def username(self) -> str | None: ...


class ChargeBook(Protocol):
    """Where the ledger's charges of a window come from (`qrpos.ledger.ChargeDesk`), placed
    by the service's time of their row where known."""

    def charges_between(self, from_utc: datetime, to_utc: datetime) -> Iterable[IntentLike]: ...


def local_charges(intents: Iterable[IntentLike], pairing: str | None = None) -> list[LocalCharge]:
    """The charge intents among the ledger's rows (reversals are not takings), each at the
    service's time of its row where known (the kiosk's clock may have been off), and
    whether it went out under `pairing` (None: any), the terminal whose history is read."""
    return [
        LocalCharge(
            intent_id=str(i.id),
            amount_mnt=i.amount_mnt or 0,
            state=str(i.state),
            charged=i.charged,
            transaction_id=i.transaction_id,
            created_at=i.service_at or i.created_at,
            here=pairing is None or i.username in (None, pairing),
        )
        for i in intents
        if i.kind == "charge"
    ]
