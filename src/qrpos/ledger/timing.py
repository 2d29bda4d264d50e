"""Time for money: when a sale may still be sent, has settled, or may be found absent.

Part of the ledger's sans-I/O decision core: pure functions of what the outbox stored and
a `Moment` the caller read (no clock is read here, no SQLite, no HTTP).

A Raspberry Pi has no battery clock: it boots on the last saved time and NTP then steps
the wall clock, often by hours, in either direction. So every duration that decides about
money is counted in *real seconds*: `CLOCK_BOOTTIME` on the boot that stamped it (a clock
NTP never steps, that counts a suspend). The wall clock is only for what a person reads,
the local day, and the history's windows (compared with the service's clock through the
measured offset, `qrpos.ledger.clockreading.ClockReading`).

Across a reboot the real time since a stamp is not known: it is *at least* the new boot's
uptime, and no more is assumed. So after a reboot the key is never sent again (its
retention is unknown; only the history is asked), late commits are waited for at least
`settle_s` of this boot, and the absence ceiling counts from this boot's start. A row
stored before stamps existed (or on a system without a boot id) falls back to the wall
clock, the best there is for it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from qrpos.ledger.events import SaleEvent
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import IntentRow, IntentState, Moment


@dataclass(frozen=True)
class Elapsed:
    """Real seconds since a stamp: always a lower bound, exact only on the same boot."""

    at_least: float
    #: None when the stamp was taken on an earlier boot: the true value is unknown
    exactly: float | None


def since(boot: str | None, up: float | None, wall_then: float, now: Moment) -> Elapsed:
    """Real seconds from a stamp (`boot`, `up`, taken at wall time `wall_then`) to `now`."""
    if boot is not None and up is not None and now.boot is not None and now.up is not None:
        if boot == now.boot:
            exact = max(0.0, now.up - up)
            return Elapsed(exact, exact)
        # an earlier boot ended before this one started: at least this boot's uptime
        return Elapsed(max(0.0, now.up), None)
    # no step-proof stamp: the wall clock is all there is (rows from before the stamps)
    wall = max(0.0, now.wall - wall_then)
    return Elapsed(wall, wall)


def first_sent(row: IntentRow) -> float:
    """Wall time of the sale's first send (its creation when it never went out)."""
    return row.first_sent_at if row.first_sent_at is not None else row.created_at


def since_first_send(row: IntentRow, now: Moment) -> Elapsed:
    """Real seconds since the sale's first request went out."""
    return since(row.first_sent_boot, row.first_sent_up, first_sent(row), now)


def since_unclear_end(row: IntentRow, now: Moment) -> Elapsed:
    """Real seconds since the sale's last request without a clear answer ended."""
    first = first_sent(row)
    wall = row.last_unclear_end_at
    if wall is None:
        wall = max(row.last_end_at or first, row.last_sent_at or first)
    return since(row.unclear_end_boot, row.unclear_end_up, wall, now)


def may_send(row: IntentRow, policy: RetryPolicy, now: Moment) -> bool:
    """True while re-sending with the same key is still allowed for this sale.

    A burst of `max_sends`, then one more after each look-up the service answered (the
    same key is the fastest proof then: it replays the 201 or charges once), until
    `resend_horizon_s` real seconds after the first send. After a reboot the time since is
    unknown, and so is the service's retention of the key: never again. A history match
    does not stop the key (issue 47): while it may be sent, only the key decides
    (`match_rule`).
    """
    elapsed = since_first_send(row, now).exactly
    return (
        row.state in (IntentState.PENDING, IntentState.UNRESOLVED)
        and bool(row.may_resend)
        and row.token is not None
        and row.attempts < policy.max_sends + row.answered_lookups
        and elapsed is not None
        and elapsed < policy.resend_horizon_s
    )


MatchRule = Literal["confirm", "person"]


def match_rule(row: IntentRow, policy: RetryPolicy, now: Moment) -> MatchRule:
    """What rows the history's window pairs with the sale may do, when the sale's own key
    never confirmed them (issue 47: the core's one rule for it).

    The service's projection carries no key, token, wallet or reference: a row is tied to
    a sale by amount and time alone, and another install on the same credentials is
    invisible until its rows show. So a window pairing never moves money and never says
    "paid" by itself:

    - "confirm": the sale is open and its key may still be sent (`may_send`, with the
      send this look-up earns): the key decides. Its next send goes out (after any 429's
      `Retry-After`); a replay of the sale's 201 is proof by reply, a 201 made now shows
      the row was a stranger's. Owed for as long as the key may be sent, through any
      number of 429s, refused connections or timeouts (the same key is idempotent per
      the contract, so a resend is safe; proof needs no settling).
    - "person" also after the key answered 409 "qr token already used" following an
      unclear attempt: the token was spent, by this sale's earlier send if the service
      forgot its key, or by another install on the same credentials where the customer
      showed the same code for the same price (review 3 of issue 47). The rows cannot
      tell the two apart, so a row the window pairs goes to a person (`unconfirmed_row`),
      and so does a window with no row (`unverified_conflict`, `moves.absence_event`).
    - "person": the key may no longer speak (abandoned: never sent again; past the resend
      horizon; another boot; a 422 after an unclear attempt, which says nothing
      committed under a key the service may have forgotten): a person decides, with the
      candidate rows offered (`unconfirmed_row`), never a refund nor "paid" on the
      window's word.
    """
    if row.state is IntentState.ABANDONED:
        return "person"
    if row.if_absent is not None:
        return "person"
    allowed = dataclasses.replace(row, answered_lookups=row.answered_lookups + 1)
    return "confirm" if may_send(allowed, policy, now) else "person"


def burst_spent(row: IntentRow, policy: RetryPolicy) -> bool:
    """Has the sale used every send it has earned: the burst of `max_sends`, and one for
    each look-up the service answered after the burst? Only then does an answered look-up
    earn another send; the look-ups that alternate with the burst's sends (`look_first`)
    earn none, so the burst stays `max_sends` long."""
    return row.attempts >= policy.max_sends + row.answered_lookups


#: sends that may end unclear before each further send waits for a look at the history
SENDS_BEFORE_LOOKING = 2


def look_first(row: IntentRow) -> bool:
    """Should the history be read before the next send of the key?

    Yes once `SENDS_BEFORE_LOOKING` sends ended without a clear answer, and no look-up
    followed the latest of them: from then on sends and look-ups alternate. A service whose
    charge endpoint keeps failing may have committed the first send long ago, and the
    history answers then; a match it finds waits for the next send of the key anyway
    (`confirm_by_key`), so the key keeps its say. Counted in requests, not on a clock. A
    sale that never reached the service (refused connections, 429s) has nothing to find.
    """
    if waits_for_key(row):
        return False
    return (
        bool(row.maybe_sent)
        and row.attempts >= SENDS_BEFORE_LOOKING
        and row.lookups < row.attempts - 1
    )


def waits_for_key(row: IntentRow) -> bool:
    """A history match is waiting for its confirming send (`confirm_by_key` set
    `matched_at`, and `matched_sends`, the sends made by then) and no send has gone out
    since: the next request must be that send. A look-up first would let the match decide
    unconfirmed (`matched_at` is set), and a row of an install nobody noticed yet would
    prove this sale: misattributed. Counted in sends, never by comparing wall stamps: a
    clock stepped back between the match and the send must not make every later send
    "the confirming one" (no backoff, no look-up) for as long as the step."""
    if row.matched_at is None or row.matched_sends is None:
        return False
    return row.attempts <= row.matched_sends


def settled(policy: RetryPolicy, row: IntentRow, now: Moment) -> bool:
    """Have late commits had `settle_s` real seconds since the last unclear request ended?

    Until then a slow request may still commit: "nothing found" proves nothing yet, and a
    review's list of candidates could miss the sale's own row.
    """
    return since_unclear_end(row, now).at_least >= policy.settle_s


def settle_left(policy: RetryPolicy, row: IntentRow, now: Moment) -> float:
    """Real seconds until late commits have had `settle_s` (`settled`); 0 once they have."""
    return max(0.0, policy.settle_s - since_unclear_end(row, now).at_least)


Absence = Literal["final", "wait", "unmeasured"]


def absence(
    policy: RetryPolicy, row: IntentRow, now: Moment, *, measured: bool, agreed: bool = True
) -> Absence:
    """What a look-up (begun at `now`) that found nothing means for the sale.

    "final" (not charged) only when resending stopped, late commits had `settle_s`, the
    window was placed on a measured clock (`measured`), and either the service answered
    this key (`if_absent`) or the ceiling `absent_after_s` (real seconds since the first
    send, at least) has passed. "unmeasured" when the ceiling passed but the window could
    never be placed: a person decides. Else "wait"; also when the look-up's own `Date`
    disagreed with the clock its window was placed on (`agreed`).
    """
    if may_send(row, policy, now) or not agreed or not settled(policy, row, now):
        return "wait"
    ceiling = since_first_send(row, now).at_least >= policy.absent_after_s
    if not measured:
        return "unmeasured" if ceiling else "wait"
    return "final" if ceiling or row.if_absent is not None else "wait"


def confirm_by_key(row: IntentRow, policy: RetryPolicy, now: Moment) -> bool:
    """Should a history match (a proof, or rows that only a person could tell apart) wait
    for the next send of the key? Yes whenever `match_rule` says "confirm": as often as a
    look-up finds the match while the key may be sent (the key, not the window, decides).
    """
    return match_rule(row, policy, now) == "confirm"


def bounded_wait(due: float | None, now: Moment, longest_s: float) -> float:
    """Seconds until the wall time `due`, never more than `longest_s` nor less than 0.

    Schedules are stored as wall times (readable in the outbox), but a wall clock stepped
    back must not stretch a 15-second backoff into half an hour, nor hold a look-up until
    the clock has caught up with a stamp taken while it ran ahead: a due time further off
    than any wait could be (`longest_s`) was stamped on a clock that has since stepped
    back, and is due now (every wait here is before a request safe to repeat: a send of
    the same key, a refund, a read of the history). A step forward only shortens a wait.
    """
    if due is None:
        return 0.0
    left = due - now.wall
    return 0.0 if left > longest_s else max(0.0, left)


#: the status of a 429: the one answer whose wait the service names (`Retry-After`)
RATE_LIMITED_STATUS = 429


def retry_wait(
    due: float | None,
    last_status: int | None,
    attempts: int,
    policy: RetryPolicy,
    now: Moment,
    due_up: tuple[str, float] | None = None,
) -> float:
    """Seconds until the next try of a sale's key or of a refund: the ledger's one bounded
    wait for retries.

    `due_up` is the same instant on the boot clock (boot id, CLOCK_BOOTTIME), when the
    process that scheduled it kept it: on that boot the wait is counted in real seconds,
    which NTP never steps. Otherwise (another process, a reboot) the stored wall time is
    read through `bounded_wait`, bounded by what the last answer could have asked for: the
    backoff's ceiling after `attempts` sends, or a 429's bounded `Retry-After`. So a wall
    clock stepped back by hours holds a retry no longer than its own backoff; a step
    forward only shortens it (a retry is safe to repeat)."""
    if last_status == RATE_LIMITED_STATUS:
        longest = policy.longest_wait_s
    else:
        longest = policy.ceiling_s(attempts)
    return wait_for(due, now, longest, due_up)


def wait_for(
    due: float | None, now: Moment, longest_s: float, due_up: tuple[str, float] | None
) -> float:
    """The ledger's one bounded wait: until `due_up` on the boot clock when it was kept on
    this boot (real seconds, never stepped), else until the stored wall time `due` through
    `bounded_wait`; never more than `longest_s`. Retries (`retry_wait`) and look-ups wait
    through it."""
    if due_up is not None and now.up is not None and due_up[0] == now.boot:
        return min(max(0.0, due_up[1] - now.up), longest_s)
    return bounded_wait(due, now, longest_s)


def due_on_boot(delay_s: float, now: Moment) -> tuple[str, float] | None:
    """`delay_s` from `now` on the boot clock (None without a boot id)."""
    if now.boot is None or now.up is None:
        return None
    return now.boot, now.up + delay_s


def next_step(row: IntentRow, policy: RetryPolicy, now: Moment, *, first: bool) -> SaleEvent:
    """What time passing asks of a sale the drive holds: a send of its key, a look at the
    history, or, when the key may no longer go out and nothing ever reached the service,
    the fact that it never was delivered. The table of moves says what follows."""
    if first:
        return SaleEvent.SEND_DUE
    sending = may_send(row, policy, now)
    if sending and not look_first(row):
        return SaleEvent.SEND_DUE
    if not sending and not row.maybe_sent:
        return SaleEvent.NEVER_DELIVERED
    return SaleEvent.LOOKUP_DUE
