"""The fault campaign's judge: the truth comes from the sandbox's own records (which
wallet was charged, which charge was reversed), never from what a kiosk believes.

Every sale has a wallet of its own, so a wallet's charges are that sale's charges. A
sale's outbox row is found by its token's digest in its install's outbox.
"""

from __future__ import annotations

import collections
import math
import statistics
from dataclasses import dataclass, field

from qrpos import spec
from qrpos.ledger import IntentState, Ledger, sales_sql, states
from qrpos.simulator import Sandbox
from qrpos.simulator.model import SimTransaction

#: the cashier gets a definite answer within this, wherever the service answers again
ANSWER_TARGET_S = 45.0


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

    @property
    def latency_s(self) -> float | None:
        """From the last fault (or the start) to a definite answer for the cashier; inf
        when none came in time; None when not measured (the other install, a killed
        process, or a sale the cashier chose to abandon early)."""
        if self.install != 1 or self.killed:
            return None
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
            and self.unresolved_left == 0
            and self.reviews_without_truth == 0
            and self.integrity == "ok"
            and not self.slow_kinds()
        )

    def report(self) -> str:
        """The figures, one per line, then the answer times per fault kind."""
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        states = ", ".join(f"{k} {v}" for k, v in sorted(self.states.items()))
        lines = [
            f"charges          {self.charges} sales in {self.seconds:.1f} s "
            f"(+{self.second_install_sales} by a second install sharing the credentials)",
            f"faults           {sum(self.faults.values())} ({faults})",
            f"kills            {self.kills} (SIGKILL of `qrpos charge`)",
            f"abandoned        {self.abandoned}",
            f"final states     {states}",
            f"needs review     {self.reviews} (settled by the owner from the sandbox's truth: "
            f"{self.reviews_settled}; the sale's own row not offered: "
            f"{self.reviews_without_truth})",
            *(f"  review {k}: {v}" for k, v in sorted(self.review_reasons.items())),
            f"second install   {'noticed' if self.foreign_noticed else 'NOT noticed'}",
            f"duplicates       {self.duplicates}",
            f"lost             {self.lost}",
            f"false 'not charged' {self.false_not_charged}",
            f"wrong refunds    {self.wrong_refunds}",
            f"misattributed    {self.misattributed}",
            f"phantom approvals {self.phantom_approvals}",
            f"charges unowned  {self.unowned}",
            f"swapped rows     {self.swapped_rows} (same price, both charged: not damage)",
            f"left unresolved  {self.unresolved_left}",
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


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (inf when a sale never got an answer)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def charges_by_wallet(sandbox: Sandbox, username: str) -> dict[str, list[SimTransaction]]:
    """This terminal's charges, per wallet, as the sandbox recorded them."""
    found: dict[str, list[SimTransaction]] = collections.defaultdict(list)
    for tx in sandbox.transactions():
        if tx.type is spec.TxType.CHARGE and tx.username == username and tx.wallet_id:
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
    username: str,
    sales: list[Sale],
    ledgers: dict[int, Ledger],
    fig: Figures,
) -> None:
    """Compare every sale's outbox row with the sandbox's truth; count the damage."""
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
        if row.is_open:
            fig.count("unresolved_left", sale, row)
        elif row.state is IntentState.NEEDS_REVIEW:
            continue  # a person decides; counted when the owner settles it
        elif row.charged == 0 and charges:
            fig.count("false_not_charged", sale, row)  # charged, and the kiosk said not
        elif abandoned and live:
            fig.count("lost", sale, row)  # abandoned, charged, and never refunded
    held = {r.tx_id for install_rows in rows.values() for r in install_rows.values() if r.tx_id}
    for sale in sales:
        if sale.install != 1:
            continue
        for tx in truth.get(sale.wallet_id, []):
            if tx.status is spec.TxStatus.COMPLETED and tx.id not in held:
                row = rows[1].get(sales_sql.token_digest(sale.token))
                if row is None or row.state is not IntentState.NEEDS_REVIEW:
                    fig.count("unowned", sale, row)  # charged, and nothing owns the charge
