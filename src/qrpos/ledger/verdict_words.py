"""The words a look-up leaves on a sale: its last detail (what the cashier and the owner
read, in either language through `qrpos.said`) and its line in the audit trail.

Pure: the event the table was asked with and the verdict it rests on are all it needs.
"""

from __future__ import annotations

from qrpos.ledger.claims import UNMEASURED, UNVERIFIED_CONFLICT, Disputed, Proven, Verdict
from qrpos.ledger.events import SaleEvent
from qrpos.ledger.states import IntentChanges
from qrpos.said import say

#: the audit trail's word for a look-up's event (a review's is its reason)
AUDIT_WORDS = {
    SaleEvent.LOOKUP_MATCH_TO_CONFIRM: "confirm_by_key",
    SaleEvent.LOOKUP_PROVEN: "proof",
    SaleEvent.LOOKUP_PROVEN_REFUNDED_ROW: "proof",
    SaleEvent.LOOKUP_DISPUTED_UNSETTLED: "disputed_unsettled",
    SaleEvent.LOOKUP_ABSENT: "absent",
    SaleEvent.LOOKUP_ABSENT_AFTER_DECLINE: "absent",
    SaleEvent.LOOKUP_ABSENT_AFTER_REFUSAL: "absent",
    SaleEvent.LOOKUP_NOT_YET: "no_candidate",
}


def verdict_words(event: SaleEvent, verdict: Verdict, watching: bool) -> IntentChanges:
    """The sale's last word after a look-up's event (none while nothing changed)."""
    if isinstance(verdict, Proven):
        tx_id = verdict.transaction.id
        if event is SaleEvent.LOOKUP_MATCH_TO_CONFIRM:
            said = say(
                "sale.confirm_by_key",
                "{id} in the history may be this sale: asking the service with the same key first",
                id=tx_id,
            )
        elif watching:
            said = say(
                "sale.found_after_abandon",
                "found charged as {id} after abandon: refunding",
                id=tx_id,
            )
        else:
            said = say("sale.found_in_history", "found in the history as {id}", id=tx_id)
        return {"last_detail": said}
    if isinstance(verdict, Disputed) and event is SaleEvent.LOOKUP_MATCH_TO_CONFIRM:
        ids = ", ".join(c.transaction.id for c in verdict.candidates[:5])
        said = say(
            "sale.confirm_dispute_by_key",
            "one of {ids} in the history may be this sale: "
            "asking the service with the same key first",
            ids=ids,
        )
        return {"last_detail": said}
    if isinstance(verdict, Disputed) and event is not SaleEvent.LOOKUP_DISPUTED_UNSETTLED:
        ids = ", ".join(c.transaction.id for c in verdict.candidates[:5])
        count = len(verdict.candidates)
        return {
            "last_detail": say(
                "sale.disputed",
                "{reason}: {count} matching charge"
                + ("s" if count > 1 else "")
                + " in the history ({ids}); a person must decide",
                reason=verdict.reason,
                count=count,
                ids=ids,
            )
        }
    if event is SaleEvent.LOOKUP_ABSENT_AFTER_CONFLICT:
        said = say(
            "sale.unverified_conflict",
            UNVERIFIED_CONFLICT + ": a retry with the same key got 409 after an unclear "
            "attempt and the history shows no matching charge; a person must decide",
        )
        return {"last_detail": said}
    if event is SaleEvent.LOOKUP_UNMEASURED:
        said = say(
            "sale.unmeasured",
            UNMEASURED + ": no matching charge, but the server's clock at the time of "
            "the sale is unknown; a person must decide",
        )
        return {"last_detail": said}
    if event in _ABSENT_EVENTS and watching:
        said = say("sale.abandoned_absent", "abandoned; the history shows it was not charged")
        return {"last_detail": said}
    if event in _ABSENT_EVENTS:
        said = say("sale.absent", "the history shows no such charge: not charged")
        return {"last_detail": said}
    return {}


_ABSENT_EVENTS = frozenset(
    {
        SaleEvent.LOOKUP_ABSENT,
        SaleEvent.LOOKUP_ABSENT_AFTER_DECLINE,
        SaleEvent.LOOKUP_ABSENT_AFTER_REFUSAL,
    }
)
