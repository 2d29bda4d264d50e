"""The owner's figures as lines of text in the current language, shared by the
owner's screens and `qrpos report`/`qrpos history` so both say the same thing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from qrpos.present.format import format_mnt, group_thousands
from qrpos.present.i18n import t, t_or
from qrpos.present.words import words
from qrpos.redact import escape_text
from qrpos.reports.pin_gate import PinCheck

if TYPE_CHECKING:
    from qrpos.ledger import ReversalResult
    from qrpos.reports import EndOfDay
    from qrpos.service import Transaction


def status_text(tx: Transaction) -> str:
    """`completed` / `REVERSED` in the current language."""
    return t(f"status.{tx.status.value}")


def vat_text(tx: Transaction) -> str:
    """The VAT receipt's state in the current language."""
    return t(f"vat.{tx.vat_status.value}") if tx.vat_status else t("vat.none")


def date_line(eod: EndOfDay) -> str:
    """Which day, and its UTC window."""
    return t(
        "eod.date",
        day=eod.day.isoformat(),
        **{
            "from": eod.from_utc.strftime("%m-%d %H:%M"),
            "to": eod.to_utc.strftime("%m-%d %H:%M"),
        },
    )


def summary_lines(eod: EndOfDay) -> list[tuple[str, str]]:
    """(label, value) rows of the totals."""
    return [
        (t("eod.gross"), format_mnt(eod.gross_mnt)),
        (t("eod.charges"), group_thousands(eod.charges_count)),
        (
            t("eod.reversed"),
            f"{group_thousands(eod.reversed_count)} · {format_mnt(eod.reversed_mnt)}",
        ),
        (
            t("eod.vat"),
            t(
                "eod.vat_line",
                pending=group_thousands(eod.vat_pending),
                issued=group_thousands(eod.vat_issued),
                voided=group_thousands(eod.vat_voided),
            ),
        ),
    ]


def reconciliation_lines(eod: EndOfDay) -> list[str]:
    """The reconciliation, one line per finding and one per case shown."""
    rec = eod.reconciliation
    if rec is None:
        return [t("eod.rec_none")]
    if rec.clean:
        return [t("eod.rec_clean", matched=group_thousands(rec.matched), count=rec.matched)]
    out = []
    if rec.missing_on_service:
        out.append(t("eod.rec_missing", count=group_thousands(len(rec.missing_on_service))))
        out.extend(
            f"  {c.transaction_id} {format_mnt(c.amount_mnt)}" for c in rec.missing_on_service
        )
    if rec.unknown_locally_count:
        out.append(t("eod.rec_unknown", count=group_thousands(rec.unknown_locally_count)))
        out.extend(f"  {c.transaction_id} {format_mnt(c.amount_mnt)}" for c in rec.unknown_locally)
    if rec.unresolved:
        out.append(t("eod.rec_unresolved", count=group_thousands(len(rec.unresolved))))
        out.extend(
            f"  #{c.intent_id} {format_mnt(c.amount_mnt)} {state_word(c.state)}"
            for c in rec.unresolved
        )
    return out


def result_text(result: ReversalResult) -> tuple[str, bool]:
    """What the owner reads after the queue's answer, and whether it is good news.

    204 and 409 both arrive as `refunded`; 403/404/400 are told apart by the service's
    HTTP status (never by its message text).
    """
    tx = result.tx_id
    message = escape_text(words(result.said or result.message))
    if result.state == "refunded":
        return t("reverse.refunded", tx=tx), True
    if result.state == "credentials_rejected":
        return t("reverse.credentials"), False
    if result.state == "unresolved":
        return t(
            "reverse.unresolved", message=escape_text(words(result.said or result.message))
        ), False
    plain = {403: "reverse.forbidden", 404: "reverse.not_found", 400: "reverse.bad_id"}.get(
        result.status or 0
    )
    if plain is not None:
        return t(plain, tx=tx), False
    return t("reverse.refused", message=message), False


def listing_failure(outcome: object) -> str:
    """Why the history could not be read, in the owner's words (never a class name)."""
    from qrpos.service.outcomes import CredentialsRejected, RateLimited, Unresolved

    if isinstance(outcome, CredentialsRejected):
        return t("history.credentials")
    if isinstance(outcome, RateLimited):
        wait = outcome.retry_after_s
        return t("history.busy", seconds=round(wait)) if wait else t("eod.busy")
    if isinstance(outcome, Unresolved):
        return t("eod.unreachable")
    message = getattr(outcome, "message", "") or ""
    return t("eod.refused", message=escape_text(message)) if message else t("eod.unreachable")


def review_reason(code: str) -> str:
    """The owner's words for a review's stable reason code (the code itself when the
    catalogue has none: a newer ledger's reason stays readable)."""
    return t_or(f"review.reason.{code}", code)


def state_word(state: str) -> str:
    """A sale's or refund's state in the current language (the raw word if unknown)."""
    return t_or(f"state.{state}", state)


def charged_word(charged: bool | None) -> str:
    """Charged, not charged, or not yet known, in the current language."""
    key = {True: "yes", False: "no", None: "unknown"}[charged]
    return t(f"cli.charged.{key}")


#: a sale's money (`qrpos.ledger.money.Money` values) to its word's key
_MONEY_KEYS = {"charged": "yes", "not_charged": "no", "unknown": "unknown", "refunded": "refunded"}


def money_word(money: str) -> str:
    """Where a sale's money stands (the ledger's `money_of`: charged, refunded, not
    charged, not yet known), in the current language; the raw word if unknown."""
    key = _MONEY_KEYS.get(money)
    return t(f"cli.charged.{key}") if key else money


def pin_refusal(check: PinCheck) -> str | None:
    """Why the manager PIN did not open the door (no PIN set, paused, wrong), or None when
    it did: one answer for every screen that asks for it."""
    if check.result == "no_pin":
        return t("reverse.no_pin")
    if check.result == "locked":
        return t("reverse.pin_locked", seconds=round(check.wait_s))
    if check.result == "wrong":
        return t("reverse.pin_wrong", left=check.attempts_left)
    return None
