"""A finished sale in the cashier's words: which colour, which headline, which detail.

Plain strings only: the screen draws them as `Text`, never as markup, so service text
stays inert. `kind` picks the colour: approved (green), declined (red), review (yellow,
the owner must check it: never "declined", never the decline's tone), warning (yellow).
`tone` is what the cashier hears (`qrpos.peripherals.sound`): approved, declined (money
not taken: "no"), attention (the outcome is not known: look), or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from qrpos import spec
from qrpos.ledger.money import Money
from qrpos.ledger.states import IntentState
from qrpos.present.format import local_datetime, shown_text
from qrpos.present.i18n import t
from qrpos.present.words import words

if TYPE_CHECKING:
    from qrpos.ledger import SaleResult

_KNOWN_DECLINES = frozenset(code.value for code in spec.DeclineCode)

OutcomeKind = Literal["approved", "declined", "review", "warning"]
ToneName = Literal["approved", "declined", "attention"]

#: steps of the resolver after which the outcome is being checked, not just sent
UNCLEAR_PHASES = frozenset({"retrying", "backing_off", "checking_history"})
_PHASE_KEYS = {
    "sending": "charging.sending",
    "retrying": "charging.retrying",
    "backing_off": "charging.backing_off",
    "checking_history": "charging.checking_history",
}


def phase_text(phase: str, attempt: int) -> str:
    """A step of the resolver in the cashier's words (the charging screen's line)."""
    return t(_PHASE_KEYS.get(phase, "charging.sending"), attempt=attempt)


@dataclass(frozen=True)
class OutcomeView:
    """What the result screen shows, already in words of the current language."""

    kind: OutcomeKind
    headline: str
    detail: str
    amount: int
    tone: ToneName | None

    @property
    def bell(self) -> bool:
        """Whether the result makes a sound at all."""
        return self.tone is not None


def decline_reason(code: str | None) -> str:
    """A human reason for a known decline code; the raw code (escaped) for any other."""
    if code in _KNOWN_DECLINES:
        return t(f"decline.{code}")
    return t("result.decline_unknown", code=shown_text(code or "?", 40))


def outcome_view(result: SaleResult) -> OutcomeView:
    """How `result` is shown to the cashier, in the current language."""
    state = result.state
    message = shown_text(words(result.message_said or result.message), 120)
    amount = result.amount_mnt
    if result.sold:
        tx = result.transaction
        detail = t(
            "result.approved_detail",
            time=local_datetime(tx.created_at) if tx else "?",
            tx=shown_text(tx.id, 70) if tx else "?",
        )
        return OutcomeView("approved", t("result.approved"), detail, amount, tone="approved")
    if state is IntentState.DECLINED:
        reason = decline_reason(result.decline_code)
        return OutcomeView("declined", t("result.declined"), reason, amount, tone="declined")
    if state is IntentState.TOKEN_USED:
        return OutcomeView(
            "declined", t("result.declined"), t("result.token_used"), amount, tone="declined"
        )
    if state is IntentState.REFUSED:
        detail = t("result.bad_request", message=message)
        return OutcomeView("declined", t("result.declined"), detail, amount, tone="declined")
    if state is IntentState.NOT_CHARGED:
        detail = t("result.not_charged")
        return OutcomeView(
            "warning", t("result.not_charged_title"), detail, amount, tone="declined"
        )
    if state in (IntentState.ABANDONED, IntentState.REVERSED_AFTER_ABANDON):
        detail = t(f"result.{state.value}")
        return OutcomeView("warning", t("result.abandoned_title"), detail, amount, tone=None)
    if result.money is Money.REFUNDED:
        # charged and kept once, then its row refunded (by hand, or by a person's review):
        # the money went back, never "not settled" (a fresh review of this stop's fix)
        detail = t("result.refunded")
        return OutcomeView("warning", t("result.refunded_title"), detail, amount, tone=None)
    if state is IntentState.NEEDS_REVIEW:
        # not declined: the customer may have paid; a second charge must not be invited
        detail = t("result.needs_review")
        return OutcomeView("review", t("result.review_title"), detail, amount, tone="attention")
    detail = t("result.not_settled", message=message)
    return OutcomeView("warning", "?", detail, amount, tone="attention")


def refusal_words(code: str | None, reason: str) -> str:
    """The catalogue's text for a scanned code the kiosk refuses (the screen and `qrpos
    charge --token` alike); for a code it lacks, the scanner's reason (escaped and
    shortened: it may quote what the QR said)."""
    if code:
        words = t(f"refusal.{code}")
        if words != f"refusal.{code}":
            return words
    return t("present.refused", reason=shown_text(reason, 160))
