"""Claims between sales and history rows: when the kiosk may say "charged" without a person.

Read this after docs/ledger.md if you are new to the ledger. What the history's rows prove
for a sale, without a person, is decided here; what the sale does next is the table of
moves (`qrpos.ledger.moves`); the drivers (`lookup`, `resolver`) gather the facts and
commit.

The two sides
-------------
* An **intent** is one sale in the outbox (`charge_intent`): an amount, an Idempotency-Key,
  the local times of its requests, and whether any request may have reached the service
  without a clear answer (`maybe_sent`).
* A **row** is a transaction in this terminal's history (`GET /v1/transactions`): an id,
  an amount, a status and the server's `createdAt`. The service scopes the history to the
  terminal's credentials, so every row was charged with *these* credentials, by this
  kiosk or by anything else that holds them.

Windows
-------
An intent's **window** is the span of server time in which its charge, if any, was
committed: from its first request to its last one plus `settle_s` for late commits,
shifted by the measured server clock offset and widened by a margin
(`qrpos.ledger.windows.window_for`). Without a trusted measurement of the server's
clock (`qrpos.ledger.clockreading.ClockReading`) the window widens by `max_clock_skew_s`
and is *unmeasured*.

Who could own a row
-------------------
An intent **could own** a row when the row is a CHARGE of exactly its amount inside its
window, the intent may have reached the service, it is not proven uncharged, and it does
not already own a row by a reply or a person's decision (`could_claim`). An intent that
holds a row through the history still could own that row: such a claim stays contestable.
A row owned by a reply or by a person is never a candidate for any other intent.

Proof (money moves automatically only on proof)
-----------------------------------------------
1. **Reply**: a 201 (or its replay) to this intent's key, checked against the request:
   same amount, type CHARGE, status COMPLETED, a `tx_` id, and this terminal's id when
   known (`reply_checks.check_reply`), committed within the sale's time on the service's
   own clock (`reply_checks.check_reply_time`). A reply that does not match is never
   approved: a person decides.
2. **History**: review the outcome, not the pairing. Every row that a sale of this outbox
   could own was charged by one of them (rows none could own are another install's). A
   sale is charged when *every* way of giving the rows linked to it distinct sales that
   could own them gives it one (`pairings_give`, a matching problem, not a count): two
   same-price sales whose replies were both lost, with two rows, are both charged, and no
   person is asked which row is whose. An approval takes a row some pairing gives it; an
   abandoned sale is refunded only on a row that is its in every pairing (a refund goes
   to one customer's wallet). A row an open review offers is held for that sale (a reply
   that did not match included, `Claimant.offered`) until a person decides it. While the
   key may still be sent and the service never answered it, a match waits for the key
   (`qrpos.ledger.timing.match_rule`, issue 47): a replay of this sale's 201 is proof by
   reply, and a charge made now shows the row was someone else's (an install nobody
   noticed yet); when the key may no longer speak, a person decides (`unconfirmed_row`).

Everything else is a **review** (`Disputed`), opened once late commits had `settle_s`
(`qrpos.ledger.timing.settled`: before that, the sale's own row may not be listed yet,
and a review offers only the rows it lists), with a stable reason code:
`ambiguous_history` (more rows than sales could account for, or a pairing that leaves
the sale without a row among several), `contested_row` (a pairing gives its only
candidate to another sale), `reply_mismatch` (a 201 that does not fit the request or is owned by
another sale), `reversed_row` (the only candidate was already reversed) and
`foreign_activity` (another install uses these credentials, see below) and
`unmeasured_clock` (nothing found, but the window could never be placed on the server's
clock, so absence proves nothing; raised once the ceiling `absent_after_s` has passed) and
`unverified_conflict` (a same-key retry after an unclear attempt got 409, which may be the
duplicate of a charge that committed, and the history shows no row that proves it) and
`other_terminal` (the sale went out under a pairing this kiosk no longer has: a new
pairing is a new terminal, so neither its key nor its history can be reached). (The last
reason, `refund_refused`, is opened by a refund's answer, not by rows:
`qrpos.ledger.events.ReviewReason` lists them all.)

Abandoned sales follow the same rules: an abandoned sale refunds a row only on proof, so it
never refunds a row another intent could own.

Absence
-------
No candidate proves nothing by itself. A sale is "not charged" only when resending has
stopped, late commits have had `settle_s`, the look-up ran on a measured clock and its
span covered the whole window, the look-up's own `Date` agreed with the clock the window
was placed on, and either the service answered this key (422, another 4xx) or the ceiling
`absent_after_s` for a service that never answers has passed
(`qrpos.ledger.timing.absence`, in real seconds). A 409 to a same-key retry is no such
answer: it may be the duplicate of a charge that committed, so without a row it is a
review, never "not charged".

The window spans every clock offset measured around the intent's own requests (their
responses' `Date`, a 409's or 5xx's included, and its look-ups'), and the reading trusted
when it was sent: when a clock jumped the measurements disagree and the window covers them.

Another install with the same credentials
-----------------------------------------
Rows inside a window the ledger looked at that no intent of this outbox can account for
(`foreign_rows`: not owned, not refunded by us, and left over after giving every intent
that could own a row at most one) were charged by someone else holding these
credentials (a row left over only because an intent could own one of several is a
*surplus*: it raises the warning, but stays a candidate, since it may be the intent's own
and the other one the stranger's). The kiosk's own earlier sales are owned rows; a
reversal changes a row's status, never adds one; so neither sets it off. Once seen, it
is recorded durably and no row proves anything by history until an owner clears the
warning: reviews, not guesses.
The clear vouches only for what comes after it: the other install charged up to the
moment it was re-paired, and not all its rows lay in a window this kiosk looked at, so a
candidate committed before the clear (on the service's clock, with margin) still goes to
a person (`foreign_until`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from qrpos.ledger.clockreading import STAMPS_AHEAD_S as STAMPS_AHEAD_S
from qrpos.ledger.clockreading import Window as Window
from qrpos.ledger.events import ReviewReason
from qrpos.ledger.states import IntentRow, IntentState, Proof
from qrpos.service.models import Transaction

#: the stable reason codes of a review (see the module docstring; `ReviewReason` holds
#: them all, and says what each means)
AMBIGUOUS: Final = ReviewReason.AMBIGUOUS_HISTORY
CONTESTED: Final = ReviewReason.CONTESTED_ROW
REPLY_MISMATCH: Final = ReviewReason.REPLY_MISMATCH
REVERSED_ROW: Final = ReviewReason.REVERSED_ROW
FOREIGN: Final = ReviewReason.FOREIGN_ACTIVITY
UNMEASURED: Final = ReviewReason.UNMEASURED_CLOCK
UNVERIFIED_CONFLICT: Final = ReviewReason.UNVERIFIED_CONFLICT
OTHER_TERMINAL: Final = ReviewReason.OTHER_TERMINAL


@dataclass(frozen=True)
class Claimant:
    """An intent that could own a row, with its window."""

    intent_id: int
    amount_mnt: int
    window: Window
    #: the row this intent holds through the history, if any: a contestable claim, chosen
    #: among rows it could own, so it never stops the intent owning another of them
    holds: str | None = None
    #: rows its open review offers: held for it whatever their amount or time (a reply
    #: that did not match the sale included), until a person settles it
    offered: frozenset[str] = frozenset()
    #: waiting for a person: whether it was charged at all may yet be decided "no"
    in_review: bool = False

    def could_own(self, tx: Transaction) -> bool:
        """True when `tx` could be this intent's charge."""
        if tx.id in self.offered or tx.id == self.holds:
            # held: its review offers it, or the history gave it to this sale; it stays
            # ownable by it whatever its window says now (the clock reading moves on)
            return tx.is_charge
        return (
            tx.is_charge
            and tx.amount_mnt == self.amount_mnt
            and self.window.contains(tx.created_at)
        )


@dataclass(frozen=True)
class Candidate:
    """A row that could be the intent's charge, and the other intents that could own it."""

    transaction: Transaction
    others: tuple[int, ...]


def candidates_json(candidates: Sequence[Candidate]) -> str:
    """The candidates as a review stores them: each row with the other sales that could own
    it (`qrpos.ledger.reviews_sql.upsert_review`)."""
    payload = [
        {"transaction": c.transaction.to_json(), "others": list(c.others)} for c in candidates
    ]
    return json.dumps(payload, sort_keys=True)


@dataclass(frozen=True)
class Proven:
    """The intent was charged: every way of pairing the rows with the sales that could own
    them gives it one. `transaction` is its row in a pairing that holds (the only one
    when the sale was abandoned and is to be refunded)."""

    transaction: Transaction


@dataclass(frozen=True)
class Disputed:
    """No proof either way: a person decides."""

    reason: ReviewReason
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True)
class NoCandidate:
    """No row could be this intent's charge (absence is judged separately)."""


Verdict = Proven | Disputed | NoCandidate


def proof_of(row: IntentRow) -> Proof | None:
    """How the intent's transaction was proven (rows from before `proof` existed too)."""
    if row.proof is not None or row.tx_id is None:
        return row.proof
    return "reply" if row.state is IntentState.APPROVED else "history"


def could_claim(row: IntentRow) -> bool:
    """May this intent own a row it does not already own by a reply or a person?"""
    if proof_of(row) in ("reply", "review"):
        return False
    if row.charged == 0:
        return False  # proven uncharged: a clean answer, or absence on a measured clock
    if row.state is IntentState.NEEDS_REVIEW:
        return True  # its outcome is open until a person decides it (even a clean reply's)
    return bool(row.maybe_sent or row.in_flight)


def owns_for_good(row: IntentRow) -> bool:
    """True when the intent's row can never be a candidate for another intent."""
    return row.tx_id is not None and proof_of(row) in ("reply", "review")


def _max_matching(
    rows: Sequence[Transaction], claimants: Sequence[Claimant], fixed: Mapping[int, int]
) -> int:
    """The most rows distinct claimants can own at once (augmenting paths, Kuhn).

    `fixed` (row index -> claimant index): those pairs are taken first and never undone.
    A look-up's component holds a handful of rows and sales, so this stays tiny.
    """
    owner = {j: i for i, j in fixed.items()}  # claimant index -> row index
    pinned = set(owner)

    def pair(i: int, seen: set[int]) -> bool:
        for j, claimant in enumerate(claimants):
            if j in seen or j in pinned or not claimant.could_own(rows[i]):
                continue
            seen.add(j)
            if j not in owner or pair(owner[j], seen):
                owner[j] = i
                return True
        return False

    return len(fixed) + sum(1 for i in range(len(rows)) if i not in fixed and pair(i, set()))


def _component(
    me: Claimant, rows: Sequence[Transaction], claimants: Sequence[Claimant]
) -> tuple[list[Transaction], list[Claimant]]:
    """The rows and sales linked to `me` by "could own" (pairings split along these)."""
    people, found = [me], []
    grew = True
    while grew:
        grew = False
        for tx in rows:
            if tx not in found and any(c.could_own(tx) for c in people):
                found.append(tx)
                grew = True
        for c in claimants:
            if c not in people and any(c.could_own(tx) for tx in found):
                people.append(c)
                grew = True
    return found, people


@dataclass(frozen=True)
class Pairings:
    """What every pairing of the rows linked to a sale with the sales that could own them
    says about that sale (`pairings_give`)."""

    #: every pairing gives the sale a row: it was charged
    certain: bool
    #: the rows the sale has in at least one pairing
    possible: tuple[Transaction, ...]
    #: its row in the canonical pairing (None when no pairing gives it one)
    canonical: Transaction | None


def _canonical(found: Sequence[Transaction], people: Sequence[Claimant]) -> dict[int, int]:
    """One pairing, the same whichever sale asks: each sale keeps the row it holds where
    it can; then sales in the order they were made take the earliest row that still
    leaves a pairing for the rest (sales at one till go out one after another, so their
    commits most likely follow the same order)."""
    fixed: dict[int, int] = {}  # row index -> claimant index
    whole = len(found)
    order = sorted(range(len(people)), key=lambda j: people[j].intent_id)
    by_time = sorted(range(whole), key=lambda i: (found[i].created_at, found[i].id))
    for j in order:
        held = people[j].holds
        for i in by_time:
            keep = found[i].id == held and i not in fixed
            if keep and _max_matching(found, people, {**fixed, i: j}) == whole:
                fixed[i] = j
    for j in order:
        if j in fixed.values():
            continue
        for i in by_time:
            if i in fixed or not people[j].could_own(found[i]):
                continue
            if _max_matching(found, people, {**fixed, i: j}) == whole:
                fixed[i] = j
                break
    return fixed


def pairings_give(
    me: Claimant, rows: Sequence[Transaction], claimants: Sequence[Claimant]
) -> Pairings | None:
    """Review the outcome, not the pairing.

    Every row that any of these sales could own was charged by one of them (rows nobody
    could own are another install's, `foreign_rows`). Returns None when the rows linked to
    `me` cannot all be paired with distinct sales (a stranger's row is among them: no
    pairing explains them); else what the pairings that hold say about `me`.
    """
    found, people = _component(me, rows, claimants)
    whole = len(found)
    if _max_matching(found, people, {}) < whole:
        return None
    me_at = people.index(me)
    others = [c for i, c in enumerate(people) if i != me_at]
    certain = _max_matching(found, others, {}) < whole
    possible = tuple(
        tx
        for i, tx in enumerate(found)
        if me.could_own(tx) and _max_matching(found, people, {i: me_at}) == whole
    )
    chosen = _canonical(found, people)
    mine = next((found[i] for i, j in chosen.items() if j == me_at), None)
    return Pairings(certain, possible, mine)


def judge(
    me: Claimant,
    rows: Iterable[Transaction],
    others: Sequence[Claimant],
    owned: Collection[str],
    *,
    foreign_active: bool,
    abandoned: bool,
    foreign_until: datetime | None = None,
) -> Verdict:
    """What the rows prove for the intent `me` (see the module docstring).

    Charged when every pairing of the rows with the sales that could own them gives `me`
    one (`pairings_give`); never when a row owned for good (`owned`) is the only way.
    Which of two identical rows is whose is never asked: an approval takes one that some
    pairing gives it (completed rows first). An abandoned sale is refunded only on a row
    that is its in every pairing (a refund goes to one customer's wallet).
    `foreign_until`: rows committed up to then may be another install's that this kiosk
    never saw (a cleared warning vouches only for later rows).
    """
    free = sorted(
        (tx for tx in rows if tx.id not in owned and tx.is_charge),
        key=lambda tx: (not tx.is_completed, tx.created_at, tx.id),
    )
    found = [tx for tx in free if me.could_own(tx)]
    if not found:
        return NoCandidate()
    rivals = [c for c in others if c.intent_id != me.intent_id]
    candidates = tuple(
        Candidate(tx, tuple(c.intent_id for c in rivals if c.could_own(tx))) for tx in found
    )
    doubtful = foreign_until is not None and any(
        c.transaction.created_at <= foreign_until for c in candidates
    )
    if foreign_active or doubtful:
        return Disputed(FOREIGN, candidates)
    given = pairings_give(me, free, rivals)
    if given is None:
        return Disputed(AMBIGUOUS, candidates)
    if not given.certain or given.canonical is None:
        return Disputed(CONTESTED if len(found) == 1 else AMBIGUOUS, candidates)
    if len(given.possible) > 1 and any(
        c.in_review and c.could_own(tx) for c in rivals for tx in given.possible
    ):
        # a sale waiting for a person accounts for a row only if the person says it was
        # charged; said "not charged", the row this sale did not take is left over: the row
        # it took by choice may be another install's nobody noticed (a campaign's sale took
        # a second install's row so, its own row left unowned)
        return Disputed(AMBIGUOUS, candidates)
    if abandoned:
        # a refund goes to one customer's wallet: only on the row that is this sale's in
        # every pairing (a row another sale holds through the history was chosen, not
        # proven, so it does not settle which is whose)
        if len(given.possible) > 1:
            return Disputed(AMBIGUOUS, candidates)
        return Proven(given.possible[0])
    if not given.canonical.is_completed:
        return Disputed(REVERSED_ROW, candidates)
    return Proven(given.canonical)


def foreign_rows(
    rows: Iterable[Transaction], claimants: Sequence[Claimant], known: Collection[str]
) -> list[Transaction]:
    """Rows no intent of this outbox could have sent.

    `known` holds the rows the outbox already accounts for (owned by an intent, or refunded
    through its queue). Each remaining row needs its own intent that could own it; the rows
    left over after the largest such pairing (one row per intent) are foreign.
    """
    unknown = [tx for tx in rows if tx.is_charge and tx.id not in known]
    free = [c for c in claimants if c.holds is None]
    paired: dict[int, int] = {}  # claimant index -> row index

    def pair(i: int, seen: set[int]) -> bool:
        # augmenting path (Kuhn): a handful of rows and intents, so this stays tiny
        for j, claimant in enumerate(free):
            if j in seen or not claimant.could_own(unknown[i]):
                continue
            seen.add(j)
            if j not in paired or pair(paired[j], seen):
                paired[j] = i
                return True
        return False

    for i in range(len(unknown)):
        pair(i, set())
    taken = set(paired.values())
    return [tx for i, tx in enumerate(unknown) if i not in taken]
