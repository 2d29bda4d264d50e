"""The states of a charge intent and of a reversal, and which moves between them are legal.

A charge intent (one sale) moves through these states; every move is committed to the
outbox before anything else happens. "Proof" and "review" are defined once, in
`qrpos.ledger.claims`::

    pending ──201 that matches the request─────▶ approved
       │    ──201 that does not match (amount,
       │      type, status, terminal)──────────▶ needs_review   (reply_mismatch)
       │    ──422 (nothing unclear before)─────▶ declined
       │    ──other 4xx (nothing unclear)──────▶ refused
       │    ──409 on a clean first answer──────▶ token_used
       │    ──401──────────────────────────────▶ credentials_rejected
       │    ──no answer / timeout / 5xx / crash▶ unresolved
       │    ──cashier gives up─────────────────▶ abandoned
    unresolved ──201 on a retry (same key)─────▶ approved (or needs_review if it mismatches)
       │    ──422/4xx/409 when no attempt was
       │      unclear (only 429s, refused
       │      connections) ────────────────────▶ declined / refused / token_used
       │    ──history: proof (unique both ways)▶ charged_per_history
       │    ──history: contested or ambiguous,
       │      or another install is active────▶ needs_review
       │    ──history: nothing, on a measured
       │      clock, after late commits settled
       │      (and a same-key answer, or the
       │      ceiling for a silent service)───▶ not_charged / declined / refused
       │    ──401──────────────────────────────▶ credentials_rejected
       │    ──cashier gives up─────────────────▶ abandoned
    credentials_rejected ──re-paired, resolve──▶ unresolved (history lookups only)
    abandoned ──history: proof─────────────────▶ (refund queued) reversed_after_abandon
       │      ──contested or ambiguous─────────▶ needs_review
    needs_review ──owner: "this row is it"─────▶ charged_per_review
       │      ──owner: "refund this row"───────▶ refunded_per_review (refund queued)
       │      ──owner: "nothing was charged"───▶ not_charged
       (abandon leaves a review in review: abandon stops the till's wait, never the question)

`pending`, `unresolved` and an open `credentials_rejected` (one whose earlier attempt
may have reached the service) block a new sale. Every other state is kept for audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final, Literal, TypedDict

from qrpos.said import Said, say


class IntentState(StrEnum):
    """Where a charge intent stands. Values are stored in the outbox and shown in JSON."""

    #: stored; the first request is about to go out or is in flight
    PENDING = "pending"
    #: 201: charged, the transaction is stored
    APPROVED = "approved"
    #: 422: the service declined it; nothing was charged
    DECLINED = "declined"
    #: another 4xx (400, 403, 404, …): stopped; nothing was charged
    REFUSED = "refused"
    #: 409 on a clean first answer: the customer's QR token was already spent
    TOKEN_USED = "token_used"  # noqa: S105 - a state name, not a secret
    #: 401: stopped until the terminal is re-paired; the row is kept
    CREDENTIALS_REJECTED = "credentials_rejected"
    #: an attempt may have reached the service without an answer; the resolver works on it
    UNRESOLVED = "unresolved"
    #: the history shows exactly one matching charge: it is ours
    CHARGED_PER_HISTORY = "charged_per_history"
    #: past the horizon the history shows no matching charge
    NOT_CHARGED = "not_charged"
    #: the history shows two or more candidates: a person must decide, never a guess
    NEEDS_REVIEW = "needs_review"
    #: the cashier gave up; never sent again (the history is still watched)
    ABANDONED = "abandoned"
    #: abandoned, later found charged in the history, and refunded automatically
    REVERSED_AFTER_ABANDON = "reversed_after_abandon"
    #: a person settled the review: this history row is this sale (the customer paid)
    CHARGED_PER_REVIEW = "charged_per_review"
    #: a person settled the review: the row was charged wrongly and is refunded (queued)
    REFUNDED_PER_REVIEW = "refunded_per_review"


class ReversalState(StrEnum):
    """Where a reversal (refund) stands."""

    #: stored; the request is about to go out, in flight, or to be retried
    PENDING = "pending"
    #: 204 or 409: the customer has the money back
    REFUNDED = "refunded"
    #: 400/403/404 (or another 4xx): ended with the service's reason
    REFUSED = "refused"
    #: 401: kept until the terminal is re-paired
    CREDENTIALS_REJECTED = "credentials_rejected"


#: states that mean the customer was charged
CHARGED_STATES: Final = frozenset(
    {
        IntentState.APPROVED,
        IntentState.CHARGED_PER_HISTORY,
        IntentState.REVERSED_AFTER_ABANDON,
        IntentState.CHARGED_PER_REVIEW,
        IntentState.REFUNDED_PER_REVIEW,
    }
)
#: states of a sale that stands charged and kept (the customer paid, nothing refunded):
#: what the till's sales and gross count, however the charge was proven
SOLD_STATES: Final = frozenset(
    {IntentState.APPROVED, IntentState.CHARGED_PER_HISTORY, IntentState.CHARGED_PER_REVIEW}
)
#: states after which nothing more happens automatically
FINAL_STATES: Final = frozenset(
    {
        IntentState.APPROVED,
        IntentState.DECLINED,
        IntentState.REFUSED,
        IntentState.TOKEN_USED,
        IntentState.CHARGED_PER_HISTORY,
        IntentState.NOT_CHARGED,
        IntentState.NEEDS_REVIEW,
        IntentState.REVERSED_AFTER_ABANDON,
        IntentState.CHARGED_PER_REVIEW,
        IntentState.REFUNDED_PER_REVIEW,
    }
)

#: every legal move; the store refuses any other (a bug must not corrupt the audit trail)
TRANSITIONS: Final[dict[IntentState, frozenset[IntentState]]] = {
    IntentState.PENDING: frozenset(
        {
            IntentState.PENDING,
            IntentState.APPROVED,
            IntentState.DECLINED,
            IntentState.REFUSED,
            IntentState.TOKEN_USED,
            IntentState.CREDENTIALS_REJECTED,
            IntentState.UNRESOLVED,
            IntentState.ABANDONED,
            IntentState.NOT_CHARGED,
            IntentState.NEEDS_REVIEW,
        }
    ),
    IntentState.UNRESOLVED: frozenset(
        {
            IntentState.UNRESOLVED,
            IntentState.APPROVED,
            IntentState.CHARGED_PER_HISTORY,
            IntentState.NEEDS_REVIEW,
            IntentState.NOT_CHARGED,
            IntentState.DECLINED,
            IntentState.REFUSED,
            # after only 429s or refused connections nothing unclear happened: a 409 is stale
            IntentState.TOKEN_USED,
            IntentState.CREDENTIALS_REJECTED,
            IntentState.ABANDONED,
        }
    ),
    IntentState.CREDENTIALS_REJECTED: frozenset(
        {
            IntentState.CREDENTIALS_REJECTED,
            IntentState.UNRESOLVED,
            IntentState.ABANDONED,
            IntentState.NEEDS_REVIEW,
        }
    ),
    IntentState.ABANDONED: frozenset(
        {IntentState.ABANDONED, IntentState.REVERSED_AFTER_ABANDON, IntentState.NEEDS_REVIEW}
    ),
    IntentState.NEEDS_REVIEW: frozenset(
        {
            IntentState.NEEDS_REVIEW,
            IntentState.CHARGED_PER_REVIEW,
            IntentState.REFUNDED_PER_REVIEW,
            IntentState.NOT_CHARGED,
        }
    ),
}


def can_move(old: IntentState, new: IntentState) -> bool:
    """True when the state machine allows `old` → `new`."""
    return new in TRANSITIONS.get(old, frozenset())


#: every legal move of a reversal: retried while pending; refunded and refused are final;
#: one stopped by a 401 goes back to pending once the terminal is re-paired
REVERSAL_TRANSITIONS: Final[dict[ReversalState, frozenset[ReversalState]]] = {
    ReversalState.PENDING: frozenset(ReversalState),
    ReversalState.CREDENTIALS_REJECTED: frozenset(
        {ReversalState.CREDENTIALS_REJECTED, ReversalState.PENDING}
    ),
    ReversalState.REFUNDED: frozenset({ReversalState.REFUNDED}),
    ReversalState.REFUSED: frozenset({ReversalState.REFUSED}),
}


def can_move_reversal(old: ReversalState, new: ReversalState) -> bool:
    """True when a reversal may move from `old` to `new`."""
    return new in REVERSAL_TRANSITIONS.get(old, frozenset())


# --- the facts the decisions take (the `*_sql` modules read and write them) ------------

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
    #: the sale's last word for a person: kept as English (`last_detail`) and as the
    #: `Said` (`detail_said`) by `sales_sql.update_intent`
    last_detail: Said | None
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
    #: `last_detail` as words for a person in any language (`qrpos.said`, JSON)
    detail_said: str | None = None

    @property
    def is_open(self) -> bool:
        """Blocks a new sale: the resolver still has to settle it."""
        return self.state in (IntentState.PENDING, IntentState.UNRESOLVED) or (
            self.state is IntentState.CREDENTIALS_REJECTED and self.charged is None
        )


@dataclass(frozen=True)
class ReversalRow:
    """One `reversal` row."""

    id: int
    tx_id: str
    intent_id: int | None
    amount_mnt: int | None
    reason: str
    state: ReversalState
    created_at: float
    attempts: int
    next_try_at: float | None
    last_status: int | None
    message: str | None
    resolved_at: float | None
    #: `message` as words for a person in any language (`qrpos.said`, JSON)
    message_said: str | None = None


class ReversalChanges(TypedDict, total=False):
    """The columns a reversal's move may change, with their types."""

    state: ReversalState
    attempts: int
    next_try_at: float | None
    last_status: int | None
    #: the refund's last word: kept as English (`message`) and as the `Said`
    #: (`message_said`) by `refunds_sql.update_reversal`
    message: Said | None
    resolved_at: float | None


#: what a 429 and a 401 leave as a sale's or a refund's last word
RATE_LIMITED: Final = say("unclear.rate_limited", "rate limited (429)")
REPAIR_NEEDED: Final = say(
    "sale.credentials_rejected", "credentials rejected (401): re-pair the terminal"
)


@dataclass(frozen=True)
class Moment:
    """ "Now", as the caller read it: the wall clock and the step-proof boot clock."""

    #: UTC epoch seconds (the wall clock; NTP steps it)
    wall: float
    #: this boot's id (None where the system does not tell)
    boot: str | None = None
    #: CLOCK_BOOTTIME seconds on this boot (None without a boot id)
    up: float | None = None


# --- the service's clock, as measured from its replies' `Date` --------------------------
# A Pi without a real-time clock can boot minutes (or days) off; the history's `createdAt`
# is the server's clock. Every response's `Date` (charges, refunds and history pages alike)
# measures `offset = server − local`; the latest measurement is kept in the outbox with
# when it was taken and since when the offset has held (a jump of either clock resets that).
#
# A measurement is trusted for a sale when it is the sale's own (a response to one of its
# requests), or the offset has held since before the sale, or it is the first measurement
# ever and was taken close to the sale. After a jump, a sale from before it that has no
# measurement of its own gets a window that spans the offsets before and after the jump
# (the jump may have come before or after its requests); with two jumps since, it is
# unmeasured. A sale's window also spans every offset its own responses measured (a 409's
# and a 5xx's `Date` too, and its look-ups'): `qrpos.ledger.lookup.offsets_for`. And since a
# service's commit times never go back when its clock does, the highest offset seen
# (`high_s`) stays in every window until the service's clock has had time to catch up with it.
# Without one the look-up window widens by `RetryPolicy.max_clock_skew_s`, and absence is
# never final (`qrpos.ledger.claims`).

#: the server's `Date` header has a resolution of one second (the true time is in [D, D+1))
DATE_RESOLUTION_S = 1.0
#: a slower exchange says too little about when the server stamped its `Date`
MAX_ROUND_TRIP_S = 2.0
#: a `Date` further than this from the kiosk's clock is garbage, not a measurement: a Pi
#: may boot at 1970, but a year-9999 (or year-1) `Date` would place windows out of range
MAX_OFFSET_S = 100 * 366 * 86_400.0


@dataclass(frozen=True)
class ClockReading:
    """The last measured offset of the server's clock (server − local, seconds)."""

    offset_s: float
    #: local time of the measurement (UTC epoch seconds)
    measured_at: float
    #: local time since which every measurement agreed with `offset_s`
    stable_since: float
    #: True when an earlier measurement disagreed (a clock jumped at some point before
    #: `stable_since`): then the offset is not known for anything before it
    jumped: bool = False
    #: the offset that held before the last jump, and since when (None: no jump known)
    previous_s: float | None = None
    previous_since: float | None = None
    #: the highest offset measured while the service's stamps may still be catching up with
    #: it (its commit times never go back when its clock does), and when it was last seen
    high_s: float | None = None
    high_at: float | None = None
    #: the latest the service's clock was ever seen at (epoch seconds on *its* clock, so
    #: stepping the kiosk's own clock cannot move it): commits are stamped no earlier
    #: than this until the service's clock passes it again
    high_date: float | None = None
    #: the boot the reading's boot-clock stamps below belong to (None: not known)
    boot: str | None = None
    #: wall − boot clock when `offset_s` was measured: the kiosk's wall-clock "frame". NTP
    #: stepping the wall clock changes the frame, not the service's clock, so an offset
    #: measured in one frame is moved into a sale's frame by the difference of the two
    #: (`in_frame`)
    frame_s: float | None = None
    #: the boot clock at `stable_since` (0.0: held since before this boot began)
    stable_up: float | None = None
    #: the boot clock at `previous_since`, and the frame `previous_s` was measured in
    #: (None: on another boot, or not known)
    previous_up: float | None = None
    previous_frame_s: float | None = None
    #: the highest mark the service's clock was *seen* to fall behind (epoch seconds on its
    #: own clock): a measurement read the clock earlier than one seen before, so commits
    #: were stamped at that mark until the clock passed it again. None: never seen going
    #: back (then no commit is stamped ahead of the service's clock)
    back_mark: float | None = None

    @property
    def measured_up(self) -> float | None:
        """The boot clock at `measured_at` (None when the frame is not known)."""
        return None if self.frame_s is None else self.measured_at - self.frame_s


def frame_of(wall: float, boot: str | None, up: float | None) -> tuple[str, float] | None:
    """A stamp's wall-clock frame (wall − boot clock) on its boot, or None without one."""
    if boot is None or up is None:
        return None
    return boot, wall - up


def in_frame(
    offset_s: float, measured: tuple[str, float] | None, sale: tuple[str, float] | None
) -> float:
    """`offset_s` (server − wall, measured in frame `measured`) as it reads in the sale's
    frame: NTP's steps of the wall clock between the two are taken out. Unchanged when
    either frame is unknown or they are on different boots (nothing says how the wall
    clock moved across a reboot)."""
    if measured is None or sale is None or measured[0] != sale[0]:
        return offset_s
    return offset_s + measured[1] - sale[1]


def plausible(server_date: datetime | None, local: float) -> datetime | None:
    """The `Date`, or None when it is more than `MAX_OFFSET_S` from the kiosk's clock."""
    if server_date is None or abs(server_date.timestamp() - local) > MAX_OFFSET_S:
        return None
    return server_date


def offset_from(server_date: datetime | None, sent_local: float, end_local: float) -> float | None:
    """server − local from one response's `Date`, taken against the request's midpoint.

    None without a `Date`, when the round trip was too slow to place it within a second, or
    when the `Date` is more than `MAX_OFFSET_S` from the kiosk's clock.
    """
    if server_date is None or not 0 <= end_local - sent_local <= MAX_ROUND_TRIP_S:
        return None
    offset = server_date.timestamp() + DATE_RESOLUTION_S / 2 - (sent_local + end_local) / 2
    return offset if abs(offset) <= MAX_OFFSET_S else None


def next_reading(
    old: ClockReading | None,
    offset_s: float,
    at: float,
    tolerance_s: float,
    boot: str | None = None,
    up: float | None = None,
) -> ClockReading:
    """The reading after a measurement of `offset_s` taken at local time `at` (boot clock
    `up` on `boot`, when known): a change beyond `tolerance_s` (or the kiosk's time going
    back) is a jump. The boot-clock stamps and frames let a sale compare the reading with
    its own times although NTP stepped the wall clock between them.

    On one boot, steadiness is judged on the boot clock (service − boot clock): a step of
    the kiosk's wall clock is no jump of the service's, and must not make every sale's
    window span the offsets before and after it."""
    same_boot = old is not None and boot is not None and old.boot == boot
    frame = None if boot is None or up is None else at - up
    old_up = None if old is None else old.measured_up
    if old is not None and same_boot and frame is not None and old_up is not None:
        assert up is not None and old.frame_s is not None
        service_now, service_then = offset_s + frame, old.offset_s + old.frame_s
        # (the boot clock is derived back from a frame: allow for its rounding)
        steady = up >= old_up - 1e-3 and abs(service_now - service_then) <= tolerance_s
    else:
        steady = (
            old is not None
            and at >= old.measured_at
            and abs(offset_s - old.offset_s) <= tolerance_s
        )
    if old is None:
        since, jumped, previous, previous_since = at, False, None, None
    elif steady:
        since, jumped = old.stable_since, old.jumped
        previous, previous_since = old.previous_s, old.previous_since
    else:
        since, jumped, previous, previous_since = at, True, old.offset_s, old.stable_since
    high, high_at = offset_s, at
    if old is not None and old.high_s is not None and old.high_at is not None:
        catching_up = at - old.high_at <= old.high_s - offset_s
        if old.high_s > offset_s + tolerance_s and catching_up:
            high, high_at = old.high_s, old.high_at
    seen = at + offset_s  # the service's clock at this measurement
    high_date = seen if old is None or old.high_date is None else max(old.high_date, seen)
    back_mark = None if old is None else old.back_mark
    if old is not None and old.high_date is not None:
        # since the last measurement the service's clock ran at most the real time that
        # passed (on the boot clock): its mark is at most that far past what was seen. A
        # clock found short of that went back at some point, and commits were stamped at
        # the mark, up to that bound. Across a reboot only this boot's uptime is known to
        # have passed (a Pi boots on an old saved time, or an RTC set ahead: the wall clock
        # would put the mark hours off and stretch every window to it)
        if old_up is not None and same_boot and up is not None:
            elapsed = max(0.0, up - old_up)
        elif up is not None:
            elapsed = max(0.0, up)
        else:
            elapsed = max(0.0, at - old.measured_at)
        bound = max(old.high_date, old.measured_at + old.offset_s + elapsed)
        if seen < bound - tolerance_s:
            back_mark = bound if back_mark is None else max(back_mark, bound)
    if old is None or boot is None or up is None:
        stable_up: float | None = up
        previous_up = previous_frame = None
    elif steady:
        # held across a reboot: at least since this boot began
        stable_up = old.stable_up if same_boot else 0.0
        previous_up = old.previous_up if same_boot else None
        previous_frame = old.previous_frame_s if same_boot else None
    else:
        stable_up = up
        previous_up = old.stable_up if same_boot else None
        previous_frame = old.frame_s if same_boot else None
    return ClockReading(
        offset_s,
        at,
        since,
        jumped,
        previous,
        previous_since,
        high,
        high_at,
        high_date,
        boot,
        frame,
        stable_up,
        previous_up,
        previous_frame,
        back_mark,
    )
