"""The fault campaign's judge: the truth comes from the sandbox's own records (which
wallet was charged, which charge was reversed), never from what a kiosk believes.

Every sale has a wallet of its own, so a wallet's charges are that sale's charges. A
sale's outbox row is found by its token's digest in its install's outbox.
"""

from __future__ import annotations

import collections
import math
import statistics
from collections.abc import Collection
from dataclasses import dataclass, field

from qrpos import spec
from qrpos.ledger import (
    IntentState,
    IntentView,
    Ledger,
    outbox_views,
    review_views,
    sales_sql,
    states,
)
from qrpos.present.i18n import languages, load_catalogue
from qrpos.simulator import Sandbox
from qrpos.simulator.model import SimTransaction

#: the cashier gets a definite answer within this, wherever the service answers again
ANSWER_TARGET_S = 45.0
#: a sale whose later sends cannot get through is answered within this of the history
#: first showing its charge (issue 41: not of the last fault, which may be minutes later)
HELD_TARGET_S = 45.0
#: a queued refund lands within this of the service taking refunds again, whatever the
#: kiosk's wall clock did meanwhile (issue 41: the policy's longest backoff is 15 s)
REFUND_DUE_S = 30.0
#: the states in which a sale says its charge was refunded
REFUNDED_STATES = (IntentState.REVERSED_AFTER_ABANDON, IntentState.REFUNDED_PER_REVIEW)


@dataclass
class Sale:
    """One sale the campaign made, and what it saw of it from outside the kiosk."""

    install: int  # 1: the kiosk under test; 2: a second install sharing its credentials
    wallet_id: str
    token: str
    amount: int
    scenario: str
    #: fault kinds that fired on this sale's requests, plus its scenario's label
    kinds: set[str] = field(default_factory=set)
    started: float = 0.0
    #: when the last fault of this sale ended (monotonic): the service answered again
    last_fault: float | None = None
    #: when the cashier had a definite answer (monotonic); None if never
    answered: float | None = None
    abandoned: bool = False
    killed: bool = False
    #: the cashier waited the campaign's full patience without an answer, then abandoned
    gave_up: bool = False
    #: when the first fault of this sale fired (monotonic): for a charge whose reply was
    #: dropped after commit, the moment the history can show the charge
    first_fault: float | None = None
    #: a sale whose later sends could not get through while the history answered: the
    #: time to the cashier's answer is measured from `first_fault`
    held: bool = False
    #: when the service took this sale's refund again after failing it (monotonic), for a
    #: refund whose backoff met a step of the kiosk's wall clock
    refund_recovered: float | None = None
    #: a refund_clock_step sale whose refund never went out before the step (its sale was
    #: not proven charged: in a person's review, or still watched): where the sale was
    #: then. Its refund, if any, is the owner's at the end of the run: not timed
    refund_step_missed: str | None = None

    @property
    def held_s(self) -> float | None:
        """From the history showing the charge to the cashier's answer (inf: none came
        within the cashier's patience); None for a sale not held."""
        if not self.held or self.install != 1 or self.first_fault is None:
            return None
        if self.answered is not None:
            return max(0.0, self.answered - self.first_fault)
        return math.inf

    @property
    def latency_s(self) -> float | None:
        """From the last fault (or the start) to a definite answer for the cashier; inf
        when none came in time; None when not measured (the other install, a killed
        process, or a sale the cashier chose to abandon early)."""
        if self.install != 1 or self.killed or self.held:
            return None  # a held sale is timed from the history (`held_s`)
        if self.answered is not None:
            return max(0.0, self.answered - (self.last_fault or self.started))
        return math.inf if self.gave_up else None


@dataclass
class Figures:
    """What a run counted. Every damage counter must be 0."""

    charges: int = 0
    second_install_sales: int = 0
    faults: collections.Counter[str] = field(default_factory=collections.Counter)
    kills: int = 0
    abandoned: int = 0
    duplicates: int = 0
    lost: int = 0
    false_not_charged: int = 0
    wrong_refunds: int = 0
    misattributed: int = 0
    #: a sale the kiosk says was charged whose customer was not charged at all
    phantom_approvals: int = 0
    #: a live charge of this kiosk's sales that no sale of either outbox owns or refunds
    unowned: int = 0
    #: a sale or refund the kiosk calls refunded whose charge the service has not reversed
    unproven_refunds: int = 0
    #: a refund neither done nor waiting in a person's review (refused, or still queued,
    #: with nobody asked): the customer's money is held and nobody is told
    refunds_stuck: int = 0
    #: a review whose reason is missing, or has no words in every catalogue
    reviews_without_reason: int = 0
    #: the ledger raised in the middle of a sale (the campaign abandons it and goes on)
    crashes: int = 0
    #: a sale in review whose charge's refund the service refused, reviewed for another
    #: reason than `refund_refused` (issue 41: the review says the refund was refused)
    refund_refused_unsaid: int = 0
    #: an owner's decision from the truth that the kiosk refused (`ReviewRefused`): the
    #: review stays open with the truth known, and nobody can close it
    reviews_refused: int = 0
    #: the run's time box (minutes) when it ended the sales early, else None
    time_boxed: float | None = None
    #: every refund of the outbox by where it ended ("refunded", "in review: REASON",
    #: "refused, no review", "pending, no review")
    refunds: collections.Counter[str] = field(default_factory=collections.Counter)
    #: refunds whose backoff met a step of the wall clock: seconds from the service
    #: taking refunds again to the charge reversed (inf: not by the end of the run)
    refund_after_step: list[float] = field(default_factory=list)
    #: refund_clock_step sales whose refund never met a 500 before the step, by where the
    #: sale was then ("needs_review: foreign_activity"): no backoff met the step, so the
    #: figure above does not time them (the owner's refund at the end of the run would be
    #: timed instead, minutes later)
    refund_step_missed: collections.Counter[str] = field(default_factory=collections.Counter)
    #: sales whose later sends could not get through: `Sale.held_s` of each
    held: list[float] = field(default_factory=list)
    #: not damage: two same-price sales, both charged, each holding the other's row (the
    #: ledger proves the outcome, never which identical row is whose; docs/ledger.md)
    swapped_rows: int = 0
    unresolved_left: int = 0
    reviews: int = 0
    reviews_settled: int = 0
    reviews_without_truth: int = 0
    #: reviews by reason and scenario ("reason: scenario [fault kinds]")
    review_reasons: collections.Counter[str] = field(default_factory=collections.Counter)
    foreign_noticed: bool = False
    #: the owner re-paired the kiosk (and the install sharing its credentials), by how:
    #: "another terminal", "same terminal, password rotated" ("..., 401 met" when the kiosk
    #: sent under the old password first)
    repairs: collections.Counter[str] = field(default_factory=collections.Counter)
    #: reviews the owner settled on a row the review could not offer (the sale went out
    #: under an earlier pairing, whose history the kiosk cannot read), named from the truth
    reviews_named: int = 0
    states: collections.Counter[str] = field(default_factory=collections.Counter)
    latencies: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    integrity: str = ""
    seconds: float = 0.0
    #: a few of the sales behind each damage counter, for whoever reads the report
    examples: dict[str, list[str]] = field(default_factory=lambda: collections.defaultdict(list))

    def count(self, counter: str, sale: Sale, row: states.IntentRow | None, n: int = 1) -> None:
        """Add `n` to a damage counter and keep the sale as an example."""
        setattr(self, counter, getattr(self, counter) + n)
        if len(self.examples[counter]) < 5:
            state = f"#{row.id} {row.state} tx {row.tx_id}" if row else "no outbox row"
            kinds = ",".join(sorted(sale.kinds)) or "none"
            self.examples[counter].append(
                f"install {sale.install}, {sale.scenario} [{kinds}], {sale.amount} MNT: {state}"
            )

    def slow_kinds(self) -> list[str]:
        """Fault kinds whose p95 time to a definite answer misses the target."""
        return [k for k, v in self.latencies.items() if percentile(v, 95) >= ANSWER_TARGET_S]

    def held_too_long(self) -> list[float]:
        """Held sales answered later than `HELD_TARGET_S` after the history showed them."""
        return [v for v in self.held if v > HELD_TARGET_S]

    def refunds_late(self) -> list[float]:
        """Refunds after a clock step that landed later than `REFUND_DUE_S`."""
        return [v for v in self.refund_after_step if v > REFUND_DUE_S]

    @property
    def ok(self) -> bool:
        """No money wrong, nothing left open, the file intact, answers in time."""
        return (
            self.duplicates == 0
            and self.lost == 0
            and self.false_not_charged == 0
            and self.wrong_refunds == 0
            and self.misattributed == 0
            and self.phantom_approvals == 0
            and self.unowned == 0
            and self.unproven_refunds == 0
            and self.refunds_stuck == 0
            and self.unresolved_left == 0
            and self.reviews_without_truth == 0
            and self.reviews_without_reason == 0
            and self.crashes == 0
            and self.refund_refused_unsaid == 0
            and self.reviews_refused == 0
            and self.integrity == "ok"
            and not self.slow_kinds()
            and not self.held_too_long()
            and not self.refunds_late()
        )

    def report(self) -> str:
        """The figures, one per line, then the answer times per fault kind."""
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        states = ", ".join(f"{k} {v}" for k, v in sorted(self.states.items()))
        lines = [
            f"charges          {self.charges} sales in {self.seconds:.1f} s "
            f"(+{self.second_install_sales} by a second install sharing the credentials)"
            + (
                f"; time box of {self.time_boxed:g} min reached: no sale after it"
                if self.time_boxed is not None
                else ""
            ),
            f"faults           {sum(self.faults.values())} ({faults})",
            f"kills            {self.kills} (SIGKILL of `qrpos charge`)",
            f"abandoned        {self.abandoned}",
            f"final states     {states}",
            f"needs review     {self.reviews} (settled by the owner from the sandbox's truth: "
            f"{self.reviews_settled}; the sale's own row not offered: "
            f"{self.reviews_without_truth}; named by the owner, another pairing's: "
            f"{self.reviews_named}; refused: {self.reviews_refused})",
            *(f"  review {k}: {v}" for k, v in sorted(self.review_reasons.items())),
            f"second install   {'noticed' if self.foreign_noticed else 'NOT noticed'}",
            f"re-pairings      {sum(self.repairs.values())}"
            + (
                " (" + ", ".join(f"{k} {v}" for k, v in sorted(self.repairs.items())) + ")"
                if self.repairs
                else ""
            ),
            f"duplicates       {self.duplicates}",
            f"lost             {self.lost}",
            f"false 'not charged' {self.false_not_charged}",
            f"wrong refunds    {self.wrong_refunds}",
            f"misattributed    {self.misattributed}",
            f"phantom approvals {self.phantom_approvals}",
            f"charges unowned  {self.unowned}",
            f"refunded without proof {self.unproven_refunds}",
            f"refunds stuck    {self.refunds_stuck} (neither done nor in a person's review)",
            f"reviews without a reason {self.reviews_without_reason}",
            f"refund refused, review says otherwise {self.refund_refused_unsaid}",
            f"refunds          {sum(self.refunds.values())}: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.refunds.items())) or "none"),
            f"refund after a clock step: {_spread(self.refund_after_step)} "
            f"(s from the service taking refunds again; due within {REFUND_DUE_S:g} s)"
            + (
                f"; not timed {sum(self.refund_step_missed.values())}, no refund went out "
                "before the step ("
                + ", ".join(f"{k} {v}" for k, v in sorted(self.refund_step_missed.items()))
                + ")"
                if self.refund_step_missed
                else ""
            ),
            f"held sends       {_spread(self.held)} (s from the history showing the charge "
            f"to the cashier's answer; due within {HELD_TARGET_S:g} s)",
            f"swapped rows     {self.swapped_rows} (same price, both charged: not damage)",
            f"left unresolved  {self.unresolved_left}",
            f"crashes          {self.crashes} (the ledger raised mid-sale)",
            f"integrity        {self.integrity}",
            "time from the last fault to a definite answer (s): kind  n  median  p95  max",
        ]
        for kind in sorted(self.latencies):
            values = self.latencies[kind]
            lines.append(
                f"  {kind:<22} {len(values):>4} {statistics.median(values):>7.2f} "
                f"{percentile(values, 95):>7.2f} {max(values):>7.2f}"
            )
        for counter, examples in sorted(self.examples.items()):
            lines.append(f"examples of {counter}:")
            lines.extend(f"  {example}" for example in examples)
        return "\n".join(lines)


def _spread(values: list[float]) -> str:
    """n, median, p95 and max of a list of seconds, and every value past 45 s."""
    if not values:
        return "n 0"
    late = sorted(v for v in values if v > HELD_TARGET_S)
    shown = ", ".join("inf" if math.isinf(v) else f"{v:.1f}" for v in late)
    return (
        f"n {len(values)}, median {statistics.median(values):.2f}, "
        f"p95 {percentile(values, 95):.2f}, max {max(values):.2f}"
        + (f"; past {HELD_TARGET_S:g} s: {shown}" if late else "")
    )


def reason_has_words(reason: str) -> bool:
    """A review's reason is a code with words in every language's catalogue."""
    return bool(reason) and all(
        f"review.reason.{reason}" in load_catalogue(lang) for lang in languages()
    )


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (inf when a sale never got an answer)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def usernames_of(username: str | Collection[str]) -> frozenset[str]:
    """Every terminal username the kiosk was paired as (one, or all of its pairings)."""
    return frozenset((username,) if isinstance(username, str) else username)


def charges_by_wallet(
    sandbox: Sandbox, username: str | Collection[str]
) -> dict[str, list[SimTransaction]]:
    """The charges of the kiosk's terminal (of every terminal it was paired to: a charge
    made under an earlier pairing is still the kiosk's sale's), per wallet, as the sandbox
    recorded them."""
    paired = usernames_of(username)
    found: dict[str, list[SimTransaction]] = collections.defaultdict(list)
    for tx in sandbox.transactions():
        if tx.type is spec.TxType.CHARGE and tx.username in paired and tx.wallet_id:
            found[tx.wallet_id].append(tx)
    return found


def rows_by_digest(ledger: Ledger) -> dict[str, states.IntentRow]:
    """Every charge intent of one outbox, by its token's digest."""
    rows = ledger.read(lambda c: sales_sql.list_intents(c, include_final=True))
    return {row.token_sha256: row for row in rows}


def _owner_of(
    tx_id: str,
    sandbox: Sandbox,
    sales: list[Sale],
    rows: dict[int, dict[str, states.IntentRow]],
) -> str:
    """Whose charge `tx_id` is, as the campaign knows it (to read a misattribution)."""
    tx = next((t for t in sandbox.transactions() if t.id == tx_id), None)
    if tx is None:
        return "no transaction of the sandbox"
    sale = next((s for s in sales if s.wallet_id == tx.wallet_id), None)
    if sale is None:
        return f"a charge of wallet {tx.wallet_id} no sale of the campaign made"
    row = rows[sale.install].get(sales_sql.token_digest(sale.token))
    state = f"#{row.id} {row.state} tx {row.tx_id}" if row else "no outbox row"
    kinds = ",".join(sorted(sale.kinds)) or "none"
    return (
        f"the charge of install {sale.install}'s {sale.scenario} sale [{kinds}], "
        f"abandoned {sale.abandoned}, killed {sale.killed}: {state}"
    )


def _swapped(
    row: states.IntentRow,
    sale: Sale,
    charges: list[SimTransaction],
    sandbox: Sandbox,
    sales: list[Sale],
    rows: dict[int, dict[str, states.IntentRow]],
) -> bool:
    """Does `row` hold the charge of another sale of the same price of this kiosk that was
    charged too, while this sale's own charge is held by a sale of this kiosk?"""
    tx = next((t for t in sandbox.transactions() if t.id == row.tx_id), None)
    other = next((s for s in sales if tx is not None and s.wallet_id == tx.wallet_id), None)
    if tx is None or other is None or other.install != sale.install:
        return False
    if other.amount != sale.amount or not charges:
        return False
    held = {r.tx_id for r in rows[sale.install].values() if r.tx_id}
    return all(c.id in held for c in charges)


def judge(
    sandbox: Sandbox,
    username: str | Collection[str],
    sales: list[Sale],
    ledgers: dict[int, Ledger],
    fig: Figures,
) -> None:
    """Compare every sale's outbox row with the sandbox's truth; count the damage.

    `username`: the terminal the kiosk is paired to, or every one it was paired to in the
    run (a re-pairing does not make the charges of the old terminal anyone else's)."""
    truth = charges_by_wallet(sandbox, username)
    rows = {install: rows_by_digest(ledger) for install, ledger in ledgers.items()}
    for sale in sales:
        charges = truth.get(sale.wallet_id, [])
        live = [tx for tx in charges if tx.status is spec.TxStatus.COMPLETED]
        refunded = [tx for tx in charges if tx.status is spec.TxStatus.REVERSED]
        row = rows[sale.install].get(sales_sql.token_digest(sale.token))
        if len(charges) > 1:
            fig.count("duplicates", sale, row, len(charges) - 1)
        if sale.install == 1 and (latency := sale.latency_s) is not None:
            for kind in sale.kinds or {"none"}:
                fig.latencies[kind].append(latency)
        if (held := sale.held_s) is not None:
            fig.held.append(held)
        if sale.install == 1 and sale.refund_step_missed is not None:
            fig.refund_step_missed[sale.refund_step_missed] += 1
        elif sale.install == 1 and sale.refund_recovered is not None and charges:
            reversed_at: dict[str, float] = getattr(sandbox, "reversed_at", {})
            landed = reversed_at.get(charges[0].id)
            fig.refund_after_step.append(
                math.inf if landed is None else max(0.0, landed - sale.refund_recovered)
            )
        if row is None:
            if live:
                fig.count("lost", sale, row)  # charged, and no sale in the outbox says so
            continue
        fig.states[str(row.state)] += 1
        abandoned = sale.abandoned or row.state in (
            IntentState.ABANDONED,
            IntentState.REVERSED_AFTER_ABANDON,
        )
        if row.tx_id is not None and charges and row.tx_id not in {tx.id for tx in charges}:
            if _swapped(row, sale, charges, sandbox, sales, rows):
                fig.swapped_rows += 1
            else:
                fig.count("misattributed", sale, row)  # it claims another sale's charge
                owner = _owner_of(row.tx_id, sandbox, sales, rows)
                fig.examples["misattributed"].append(f"  ... {row.tx_id} is {owner}")
        if row.charged == 1 and not charges:
            fig.count("phantom_approvals", sale, row)  # "paid" (or refunded), nobody paid
        if refunded and not abandoned:
            fig.count("wrong_refunds", sale, row, len(refunded))  # a paid sale refunded
        if row.state in REFUNDED_STATES and not refunded:
            fig.count("unproven_refunds", sale, row)  # "refunded", and nothing was
        if row.is_open:
            fig.count("unresolved_left", sale, row)
        elif row.state is IntentState.NEEDS_REVIEW:
            continue  # a person decides; counted when the owner settles it
        elif row.charged == 0 and charges:
            fig.count("false_not_charged", sale, row)  # charged, and the kiosk said not
        elif abandoned and live:
            fig.count("lost", sale, row)  # abandoned, charged, and never refunded
    _judge_refunds_and_reviews(sandbox, sales, ledgers, rows, fig)
    held = {r.tx_id for install_rows in rows.values() for r in install_rows.values() if r.tx_id}
    for sale in sales:
        if sale.install != 1:
            continue
        for tx in truth.get(sale.wallet_id, []):
            if tx.status is spec.TxStatus.COMPLETED and tx.id not in held:
                row = rows[1].get(sales_sql.token_digest(sale.token))
                if row is None or row.state is not IntentState.NEEDS_REVIEW:
                    fig.count("unowned", sale, row)  # charged, and nothing owns the charge


def _judge_refunds_and_reviews(
    sandbox: Sandbox,
    sales: list[Sale],
    ledgers: dict[int, Ledger],
    rows: dict[int, dict[str, states.IntentRow]],
    fig: Figures,
) -> None:
    """Every refund done (on the service's proof) or waiting in a person's review; every
    review left open has a reason with words. Read from the outbox as `qrpos outbox list
    --all` and `qrpos outbox review` read it."""
    status = {tx.id: tx.status for tx in sandbox.transactions()}
    for install, ledger in ledgers.items():
        views = outbox_views(ledger, include_final=True)
        reviews = {int(v.intent.id): v.reason for v in review_views(ledger)}
        fig.reviews_without_reason += sum(not reason_has_words(r) for r in reviews.values())
        sale_of_tx = {v.transaction_id: v for v in views if v.kind == "charge"}
        sale_of_row = {
            row.id: (sale, row)
            for sale in sales
            if sale.install == install
            and (row := rows[install].get(sales_sql.token_digest(sale.token))) is not None
        }
        # a charge's refunds: a refused one may be followed by a person's refund again;
        # the charge's latest refund (by its number: r1, r2; the wall clock may have been
        # stepped between them) says where it stands
        latest: dict[str, IntentView] = {}
        refunds = sorted((v for v in views if v.kind == "reversal"), key=lambda v: int(v.id[1:]))
        for view in refunds:
            latest[view.transaction_id or ""] = view
        for tx_id, refund in latest.items():
            owner = sale_of_tx.get(tx_id)
            reason = reviews.get(int(owner.id)) if owner is not None else None
            if refund.state == "refunded" and status.get(tx_id) is spec.TxStatus.REVERSED:
                fig.refunds["refunded"] += 1
                continue
            if refund.state == "refunded":
                fig.refunds["refunded, not reversed by the service"] += 1
                if owner is not None and owner.state in REFUNDED_STATES:
                    continue  # counted with its sale, in `judge`
                counter = "unproven_refunds"
            elif reason is not None:
                fig.refunds[f"{refund.state}, in review: {reason}"] += 1
                continue
            else:
                fig.refunds[f"{refund.state}, no review"] += 1
                counter = "refunds_stuck"
            found = sale_of_row.get(int(owner.id)) if owner is not None else None
            if found is None:
                setattr(fig, counter, getattr(fig, counter) + 1)
                fig.examples[counter].append(f"refund {refund.id} of {tx_id}: no sale")
                continue
            shown = len(fig.examples[counter])
            fig.count(counter, *found)
            if len(fig.examples[counter]) > shown:
                fig.examples[counter][-1] += f"; refund {refund.id} {refund.state}"
