"""A finished sale in the cashier's words: which colour, which headline, which detail."""

from __future__ import annotations

from rich.text import Text

from qrpos import spec
from qrpos.ledger import IntentState, SaleResult
from qrpos.tui.format import local_datetime, shown_text
from qrpos.tui.i18n import t
from qrpos.tui.screens.result import ResultView

_KNOWN_DECLINES = frozenset(code.value for code in spec.DeclineCode)


def decline_reason(code: str | None) -> str:
    """A human reason for a known decline code; the raw code (escaped) for any other."""
    if code in _KNOWN_DECLINES:
        return t(f"decline.{code}")
    return t("result.decline_unknown", code=shown_text(code or "?", 40))


def result_view(result: SaleResult) -> ResultView:
    """How `result` is shown; `Text` throughout so service text is never markup."""
    state = result.state
    message = shown_text(result.message or "", 120)
    amount = result.amount_mnt
    if state in (IntentState.APPROVED, IntentState.CHARGED_PER_HISTORY):
        tx = result.transaction
        detail = Text(
            t(
                "result.approved_detail",
                time=local_datetime(tx.created_at) if tx else "?",
                tx=shown_text(tx.id, 70) if tx else "?",
            )
        )
        return ResultView("approved", t("result.approved"), detail, amount, bell=True)
    if state is IntentState.DECLINED:
        reason = decline_reason(result.decline_code)
        return ResultView("declined", t("result.declined"), Text(reason), amount, bell=True)
    if state is IntentState.TOKEN_USED:
        return ResultView(
            "declined", t("result.declined"), Text(t("result.token_used")), amount, bell=True
        )
    if state is IntentState.REFUSED:
        return ResultView(
            "declined",
            t("result.declined"),
            Text(t("result.bad_request", message=message)),
            amount,
            bell=True,
        )
    if state is IntentState.NOT_CHARGED:
        return ResultView(
            "warning", t("result.declined"), Text(t("result.not_charged")), amount, bell=True
        )
    if state is IntentState.ABANDONED:
        return ResultView("warning", t("keys.abandon"), Text(t("result.abandoned")), amount, False)
    if state is IntentState.REVERSED_AFTER_ABANDON:
        detail = Text(t("result.reversed_after_abandon"))
        return ResultView("warning", t("keys.abandon"), detail, amount, bell=False)
    if state is IntentState.NEEDS_REVIEW:
        detail = Text(t("result.needs_review", message=message))
        return ResultView("warning", t("result.declined"), detail, amount, bell=True)
    return ResultView(
        "warning", "?", Text(t("result.not_settled", message=message)), amount, bell=False
    )
