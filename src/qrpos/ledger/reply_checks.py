"""What a 201 must fit before the kiosk says "charged" on its word alone: the row it names is
a COMPLETED CHARGE of this sale's amount, on this terminal when known (`check_reply`),
committed within the sale's time on the service's own clock (`check_reply_time`). Pure:
the facts come in, the reason (or None) goes out; `qrpos.ledger.claims` says why a reply
that does not match goes to a person.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from qrpos import spec
from qrpos.ledger.clockreading import STAMPS_AHEAD_S as STAMPS_AHEAD_S
from qrpos.said import Said, say
from qrpos.service.models import Transaction


def check_reply(tx: Transaction, amount_mnt: int, terminal_id: str | None) -> Said | None:
    """Why a 201 does not fit the request, or None when it does."""
    if not tx.id.startswith(spec.TX_PREFIX):
        return say(
            "reply.not_an_id", "the reply's id {id} is not a transaction id", id=repr(tx.id[:40])
        )
    if tx.amount_mnt != amount_mnt:
        return say(
            "reply.other_amount",
            "the reply charged {amount_reply} MNT, the sale asked {amount} MNT",
            amount_reply=tx.amount_mnt,
            amount=amount_mnt,
        )
    if not tx.is_charge:
        return say("reply.not_a_charge", "the reply is a {type}, not a CHARGE", type=tx.type.value)
    if not tx.is_completed:
        return say(
            "reply.not_completed",
            "the reply's status is {status}, not COMPLETED",
            status=tx.status.value,
        )
    if terminal_id is not None and tx.terminal_id is not None and tx.terminal_id != terminal_id:
        return say(
            "reply.other_terminal",
            "the reply names terminal {theirs}, this terminal is {ours}",
            theirs=tx.terminal_id,
            ours=terminal_id,
        )
    return None


def check_reply_time(
    tx: Transaction, server_date: datetime | None, elapsed_s: float | None, slack_s: float
) -> Said | None:
    """Why a 201's `createdAt` cannot be this intent's commit, or None when it can.

    Clock-free: both ends are the service's own clock. The commit happened after the
    intent's first request reached the service, at most `elapsed_s` (local seconds since
    that request) before the reply's `Date`: `slack_s` (`max_clock_skew_s`) allows for a
    service clock that stepped forward between the commit and a replay. It may be stamped
    ahead of the `Date` by up to `STAMPS_AHEAD_S` (a high-water mark after a step back).
    So an honest reply passes, and a row committed long before the sale (a cache replaying
    an old answer) or years ahead does not. No `Date`: nothing to place it against.
    `elapsed_s` is in real seconds (`qrpos.ledger.timing`); None after a reboot, when it is
    not known: then there is no earliest time, only the latest.
    """
    if server_date is None:
        return None
    latest = server_date + timedelta(seconds=STAMPS_AHEAD_S)
    earliest = (
        None
        if elapsed_s is None
        else server_date - timedelta(seconds=max(elapsed_s, 0.0) + slack_s)
    )
    if (earliest is None or earliest <= tx.created_at) and tx.created_at <= latest:
        return None
    return say(
        "reply.outside_time",
        "the reply's {id} was committed at {at}, outside this sale's time on the service's "
        "clock ({earliest} .. {latest})",
        id=tx.id,
        at=tx.created_at.isoformat(),
        earliest="…" if earliest is None else earliest.isoformat(),
        latest=latest.isoformat(),
    )
