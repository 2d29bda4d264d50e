"""The outbox's rows as plain typed values: what the decision core reads and writes.

No SQL and no I/O here (`qrpos.ledger.records` reads and writes these rows), so the pure
modules of the ledger (`claims`, `timing`) can take them as facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from qrpos.ledger.states import IntentState

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
    matched_at: float | None
    first_sent_boot: str | None
    first_sent_up: float | None
    username: str | None


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

    @property
    def is_open(self) -> bool:
        """Blocks a new sale: the resolver still has to settle it."""
        return self.state in (IntentState.PENDING, IntentState.UNRESOLVED) or (
            self.state is IntentState.CREDENTIALS_REJECTED and self.charged is None
        )
