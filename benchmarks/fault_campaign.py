"""Fault campaign: many sales against the sandbox with faults and SIGKILLs; count the damage.

    python benchmarks/fault_campaign.py --charges 1000 --kills      (the long run)
    python benchmarks/fault_campaign.py --quick                      (40 sales with kills)

Each sale gets its own wallet. Sales take turns through these scenarios (shuffled):

- faults: zero to two random faults (drop after commit, 5xx before/after commit, slow
  replies past the client timeout, 429 storms, forgotten idempotency keys, trickled
  replies); the amount often repeats; some unclear sales are abandoned;
- clock: the service's clock moves to +-2.5 or +-10 min off (and stays there), the reply
  is lost after commit and then the service does not answer for a while;
- outage_before_commit (every tenth round): the request fails before commit and the
  service does not answer for a while, so resending stops before it is back;
- abandon_then_same: an unclear sale is abandoned, the next one has the same amount and
  loses its reply and its idempotency key, so only the history can tell them apart;
- second_install: another install sharing the terminal's credentials sells the same
  amounts at the same time while this kiosk's sale loses its reply and its key;
- trickle: the reply comes a few bytes a second, so only the request deadline ends it;
- kiosk_clock: the kiosk's own wall clock is hours off (a Pi booted on its last saved
  time, or NTP mis-set) and is stepped right in the middle of a sale whose reply was
  lost, forward or back by hours: nothing about money may depend on it;
- refund_refused: a sale committed whose reply and every retry are 500s, the history
  unreadable, is abandoned; the history then shows the charge and the kiosk refunds it,
  and the service refuses the refund (403, sometimes after 500s): the sale must go to a
  person's review, saying why (the owner refunds it again at the end, from the truth);
- refund_clock_step: the same abandoned charged sale on a kiosk whose wall clock is
  hours ahead; its refund meets 500s and waits, NTP steps the clock back for good, the
  service takes refunds again: the refund must land within 30 s (`REFUND_DUE_S`) (a
  sale not proven charged before the step, in a person's review, say, has no refund in
  backoff: it is counted apart, not timed);
- send_held (every `--held-every` rounds, 0: never): a sale is committed and its reply
  lost, then the charge endpoint answers nothing for minutes (timeouts or dropped
  connections) while the history answers, sometimes with the kiosk's clock stepped by
  hours mid-sale or the service's clock minutes off:
  the cashier's answer is due within 45 s of the history showing the charge, timed from
  the commit (`HELD_TARGET_S`), the cashier waiting up to `HELD_PATIENCE_S`;
- kill (with --kills): `qrpos charge` is SIGKILLed at a random moment, then finished;
- repair (every `--repair-every` rounds, 0: never): a sale commits and its reply is lost,
  then the owner re-pairs the kiosk (and the install sharing its credentials) mid-sale:
  mostly to another terminal, whose history cannot show the old one's rows, so the sale
  must go to a person (`other_terminal`) and the owner names its charge from the truth;
  sometimes to the same terminal with a rotated password (the kiosk may meet the 401
  first), and the sale resolves under the new password. Its draws come from a random
  stream of its own, so the other scenarios draw what older seeds drew (the sales are
  numbered differently: `--repair-every 0` replays an older run's plan exactly).

The truth is the sandbox's own record (`campaign_judge`); the owner settles the reviews
from it at the end. Times are measured with a 0.5 s client timeout and short backoffs,
but the ledger's ceiling for "no answer ever" stays far above the answer target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from campaign_judge import Figures, Sale, judge, reason_has_words
from campaign_world import (
    CLIENT_TIMEOUT_S,
    CampaignSandbox,
    FaultlessDoor,
    cli_env,
    killed_sale,
    repair_env,
)
from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    MarkCharged,
    MarkNotCharged,
    RefundRow,
    RetryPolicy,
    ReviewRefused,
    outbox_views,
    reviews_sql,
    sales_sql,
)
from qrpos.service import TerminalClient
from qrpos.simulator import SimulatorOptions, create_app, serve_in_thread
from qrpos.simulator.faults import FAULT_KINDS

#: the longest "no answer" outage a scenario arms (seconds)
OUTAGE_MAX_S = 4.0
#: short real waits and a far "never answered" ceiling; late commits are honoured: a
#: request the sandbox holds (a delay fault, then an outage of delay faults of 0.8 s each)
#: commits up to OUTAGE_MAX_S + 2 x 0.9 s after it arrived, and settle_s covers that, as
#: CLIENT_TIMEOUT_S + 5 s covers a real service's slow commits in the default policy
POLICY = RetryPolicy(
    base_delay_s=0.01,
    max_delay_s=0.05,
    max_sends=4,
    resend_horizon_s=3600.0,
    absent_after_s=120.0,
    settle_s=OUTAGE_MAX_S + 2.0,
    window_margin_s=1.0,
    lookup_interval_s=0.05,
)
#: how long the campaign's cashier waits for a definite answer before abandoning (past
#: the 45 s target, so that a sale that waits too long shows as "inf", not as a pass)
PATIENCE_S = 50.0
CLOCK_OFFSETS_S = (150.0, -150.0, 600.0, -600.0)
SCENARIOS = (
    "faults",
    "faults",
    "clock",
    "abandon_then_same",
    "second_install",
    "trickle",
    "kiosk_clock",
    "refund_refused",
    "refund_clock_step",
)
#: a canteen's set-menu prices: most sales are one of these (same-price sales all day)
SET_PRICES = (4500, 6000, 7500, 9000)
#: how far the kiosk's wall clock is off before NTP steps it (seconds, both ways)
KIOSK_STEPS_S = (-3 * 3600.0, -45 * 60.0, 2 * 3600.0, 5 * 3600.0)
#: the kinds a "faults" sale draws from: a 403 is armed by the refund scenarios alone (the
#: draw is the one older seeds made, so a seed replays the same campaign)
RANDOM_FAULT_KINDS = tuple(kind for kind in FAULT_KINDS if kind != "forbidden")
#: one round in this many also has an outage_before_commit (each can wait PATIENCE_S)
OUTAGE_BEFORE_COMMIT_EVERY = 10
#: one round in this many also has a send_held sale (0: never; `--held-every`)
HELD_EVERY = 5
#: how long the charge endpoint answers nothing in a send_held sale (it ends sooner once
#: the cashier has an answer: no other sale is held behind it)
HELD_OUTAGE_S = 180.0
#: how long the cashier waits for a held sale's answer (past the 45 s target, and past
#: the 75 s the issue saw, so that a slow answer is measured rather than cut off)
HELD_PATIENCE_S = 100.0
#: how far ahead the kiosk's wall clock is when a refund's backoff begins; NTP then
#: steps it back to the true time (issue 41: back 2 h)
REFUND_STEPS_S = (2 * 3600.0, 2 * 3600.0, 45 * 60.0, 5 * 3600.0)
#: one round in this many also has a re-pairing mid-sale (0: never; `--repair-every`)
REPAIR_EVERY = 3
#: how often a re-pairing is to the same terminal with a rotated password (else: another)
REPAIR_SAME_TERMINAL = 0.3
#: how often the cashier has abandoned the sale before the owner re-pairs (its charge is
#: then refunded from the truth: the owner names the old terminal's row to refund)
REPAIR_ABANDONED = 0.25


@dataclasses.dataclass
class Run:
    """One campaign's parts and its record."""

    rng: random.Random
    sandbox: CampaignSandbox
    username: str
    desk: ChargeDesk
    desk2: ChargeDesk
    env: dict[str, str]
    figures: Figures
    sales: list[Sale] = dataclasses.field(default_factory=list)
    amount: int = 1000
    patience_s: float = PATIENCE_S
    #: the kiosk's wall clock minus the true time (NTP steps it back to 0)
    kiosk_offset_s: float = 0.0
    held_patience_s: float = HELD_PATIENCE_S
    #: the sandbox's two front doors: the kiosk's (faults fire) and the second install's
    urls: tuple[str, str] = ("", "")
    #: every terminal the kiosk was paired as, the first one first (`username`: the one now)
    usernames: list[str] = dataclasses.field(default_factory=list)
    #: the clients the re-pairings made (closed at the end)
    clients: list[TerminalClient] = dataclasses.field(default_factory=list)
    #: the re-pairings' own draws (the other scenarios' draws stay those of older seeds)
    side: random.Random = dataclasses.field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if not self.usernames:
            self.usernames.append(self.username)

    def new_sale(self, scenario: str, amount: int, install: int = 1) -> Sale:
        wallet = self.sandbox.create_wallet(1_000_000)
        sale = Sale(install, wallet.wallet_id, wallet.qr_token, amount, scenario)
        sale.started = time.monotonic()
        if scenario not in ("faults", "kill"):
            sale.kinds.add(scenario)
        self.sales.append(sale)
        return sale

    def next_amount(self) -> int:
        if self.rng.random() > 0.3:  # else the same amount twice in a row
            if self.rng.random() < 0.85:
                self.amount = self.rng.choice(SET_PRICES)
            else:
                self.amount = self.rng.randint(1, 50_000)
        return self.amount

    def kiosk_clock(self) -> datetime:
        """The kiosk's wall clock: the true time plus whatever it is off by."""
        return datetime.now(UTC) + timedelta(seconds=self.kiosk_offset_s)


async def sell(
    run: Run,
    sale: Sale,
    *,
    deadline_s: float,
    abandon: bool = False,
    patience_s: float | None = None,
) -> None:
    """The kiosk sells: wait for a definite answer (up to PATIENCE_S), or abandon."""
    run.sandbox.current = sale
    desk = run.desk
    result = await desk.charge(sale.amount, sale.token, deadline_s=deadline_s)
    if result.is_open and abandon:
        await desk.abandon(result.intent_id)
        sale.abandoned = True
        run.figures.abandoned += 1
        return
    patience = run.patience_s if patience_s is None else patience_s
    while result.is_open and time.monotonic() - sale.started < patience:
        result = await desk.resolve(result.intent_id, deadline_s=2.0)
    if result.is_open:
        sale.gave_up = sale.abandoned = True
        run.figures.abandoned += 1
        await desk.abandon(result.intent_id)
        return
    sale.answered = time.monotonic()


def arm_random_faults(run: Run) -> None:
    """Arm zero to two faults for the next requests."""
    rng, sandbox = run.rng, run.sandbox
    for _ in range(rng.choice((0, 1, 1, 2))):
        kind = rng.choice(RANDOM_FAULT_KINDS)
        params: dict[str, Any] = {}
        count = 1
        if kind == "delay":
            params = {"seconds": CLIENT_TIMEOUT_S + rng.uniform(0.1, 0.4), "operation": "charge"}
        elif kind == "rate_limit":
            count, params = rng.randint(2, 6), {"retry_after": 0.01}
        elif kind == "forget_idempotency":
            count = 2
        elif kind in ("error_before_commit", "error_after_commit"):
            count = rng.randint(1, 3)
        elif kind == "trickle":
            params = {"bytes_per_s": rng.choice((20, 50))}
        sandbox.arm_fault(kind, count=count, **params)
        run.figures.faults[kind] += 1


async def scenario_faults(run: Run) -> None:
    sale = run.new_sale("faults", run.next_amount())
    arm_random_faults(run)
    deadline = run.rng.choice((0.3, 3.0, 3.0))
    await sell(run, sale, deadline_s=deadline, abandon=run.rng.random() < 0.5)


async def scenario_clock(run: Run) -> None:
    offset = run.rng.choice(CLOCK_OFFSETS_S)
    run.sandbox.set_clock_offset(offset)
    sale = run.new_sale("clock", run.next_amount())
    sale.kinds.discard("clock")
    sale.kinds.add(f"clock {offset / 60:+g} min")
    first = run.rng.choice(("drop_after_commit", "error_after_commit"))
    await lost_then_silent(run, sale, first)


async def scenario_outage_before_commit(run: Run) -> None:
    sale = run.new_sale("outage_before_commit", run.next_amount())
    await lost_then_silent(run, sale, "error_before_commit")


async def lost_then_silent(run: Run, sale: Sale, first: str) -> None:
    """`first` fault on the charge, then no answer (500s or silence) for 1-4 s."""
    run.sandbox.arm_fault(first, operation="charge")
    run.figures.faults[first] += 1
    outage = run.rng.choice(("error_before_commit", "delay"))
    run.sandbox.outage_after_next_fault(run.rng.uniform(1.0, OUTAGE_MAX_S), outage)
    run.figures.faults["outage"] += 1
    await sell(run, sale, deadline_s=run.rng.choice((0.5, 3.0)))


async def scenario_abandon_then_same(run: Run) -> None:
    amount = run.next_amount()
    first = run.new_sale("abandon_then_same", amount)
    run.sandbox.arm_fault(run.rng.choice(("drop_after_commit", "error_before_commit")))
    run.sandbox.outage_after_next_fault(2.0, "error_before_commit")
    await sell(run, first, deadline_s=0.3, abandon=True)
    run.sandbox.end_outage()
    run.sandbox.clear_faults()
    second = run.new_sale("abandon_then_same", amount)
    run.sandbox.arm_fault("drop_after_commit", operation="charge")
    run.sandbox.arm_fault("forget_idempotency", count=3)
    run.figures.faults.update(("drop_after_commit", "forget_idempotency"))
    await sell(run, second, deadline_s=3.0)


async def scenario_second_install(run: Run) -> None:
    amount = run.next_amount()
    stop = asyncio.Event()

    async def other_till() -> None:
        while not stop.is_set():
            same = run.rng.random() < 0.7
            sale = run.new_sale("second_install", amount if same else run.next_amount(), 2)
            run.figures.second_install_sales += 1
            result = await run.desk2.charge(sale.amount, sale.token, deadline_s=3.0)
            while result.is_open and time.monotonic() - sale.started < run.patience_s:
                result = await run.desk2.resolve(result.intent_id, deadline_s=2.0)
            await asyncio.sleep(run.rng.uniform(0.02, 0.2))

    task = asyncio.create_task(other_till())
    await asyncio.sleep(0.1)
    sale = run.new_sale("second_install", amount)
    run.sandbox.arm_fault("drop_after_commit", operation="charge")
    run.sandbox.arm_fault("forget_idempotency", count=3)
    run.figures.faults.update(("drop_after_commit", "forget_idempotency"))
    await sell(run, sale, deadline_s=3.0)
    stop.set()
    await task
    for desk in (run.desk, run.desk2):
        if desk.listing.foreign_activity() is not None:
            run.figures.foreign_noticed = True
            desk.clear_foreign_activity()  # the owner has re-paired the other till


async def scenario_trickle(run: Run) -> None:
    sale = run.new_sale("trickle", run.next_amount())
    run.sandbox.arm_fault("trickle", operation="charge", bytes_per_s=run.rng.choice((5, 20)))
    run.figures.faults["trickle"] += 1
    await sell(run, sale, deadline_s=3.0)


async def scenario_kiosk_clock(run: Run) -> None:
    """The Pi's clock is hours off, the sale's reply is lost, and NTP steps the clock right
    then (forward or back); sometimes the clock is right and NTP steps it wrong instead."""
    step = run.rng.choice(KIOSK_STEPS_S)
    booted_wrong = run.rng.random() < 0.7
    run.kiosk_offset_s = step if booted_wrong else 0.0
    sale = run.new_sale("kiosk_clock", run.next_amount())
    sale.kinds.discard("kiosk_clock")
    sale.kinds.add(f"kiosk clock {'booted' if booted_wrong else 'stepped'} {step / 3600:+g} h")
    first = run.rng.choice(("drop_after_commit", "error_after_commit", "delay"))
    params = {"seconds": CLIENT_TIMEOUT_S + 0.3} if first == "delay" else {}
    run.sandbox.arm_fault(first, operation="charge", **params)
    run.figures.faults[first] += 1
    run.sandbox.current = sale
    result = await run.desk.charge(sale.amount, sale.token, deadline_s=0.4)
    run.kiosk_offset_s = 0.0 if booted_wrong else step  # NTP steps the clock mid-sale
    await answer_or_abandon(run, sale, result, run.patience_s)
    run.kiosk_offset_s = 0.0  # synced for the next sale


async def answer_or_abandon(run: Run, sale: Sale, result: Any, patience_s: float) -> None:
    """The cashier waits up to `patience_s` from the sale's start for a definite answer,
    then gives up on the sale (abandon: the kiosk keeps watching it)."""
    while result.is_open and time.monotonic() - sale.started < patience_s:
        result = await run.desk.resolve(result.intent_id, deadline_s=2.0)
    if result.is_open:
        sale.gave_up = sale.abandoned = True
        run.figures.abandoned += 1
        await run.desk.abandon(result.intent_id)
    else:
        sale.answered = time.monotonic()


async def abandoned_while_charged(run: Run, sale: Sale) -> None:
    """The sale commits at once, but its reply and every retry's are 500s and the history
    cannot be read: the cashier abandons it (charged, unknown to the kiosk)."""
    run.sandbox.arm_fault("error_after_commit", count=10_000, operation="charge")
    run.sandbox.arm_fault("error_before_commit", count=10_000, operation="list")
    run.figures.faults.update(("error_after_commit", "error_before_commit"))
    await sell(run, sale, deadline_s=0.3, abandon=True)
    run.sandbox.current = None
    run.sandbox.clear_faults()


async def refund_tried(run: Run, sale: Sale, done: Any, *, within_s: float = 10.0) -> None:
    """Let the kiosk's settler work (as between sales) until `done()` or `within_s`."""
    until = time.monotonic() + within_s
    while not done() and time.monotonic() < until:
        await run.desk.recover(deadline_s=1.0)
        await asyncio.sleep(0.05)


async def owner_refunds_from_review(run: Run, sale: Sale) -> bool:
    """The abandoned sale went to a person's review instead of being proven charged
    (another install's rows of its price make its row doubtful, for a while after the
    owner cleared the warning): the owner checks it and refunds the customer's charge from
    the review, as a person would. Then a refund of the sale's row is asked for either
    way, and the scenario's faults meet it (`True`); `False` when there is nothing to
    refund from (not in review, or its row not offered)."""
    charged = [t.id for t in run.sandbox.transactions() if t.wallet_id == sale.wallet_id]
    row = run.desk.ledger.read(lambda c: outbox_row(c, sale))
    if row is None or row.state is not IntentState.NEEDS_REVIEW or len(charged) != 1:
        return False
    view = next((r for r in run.desk.listing.reviews() if int(r.intent.id) == row.id), None)
    if view is None or charged[0] not in [c.transaction.id for c in view.candidates]:
        return False
    sale.kinds.add("the owner refunded it from its review")
    # one try now, as the owner's screen makes it; the queue retries it after that
    await run.desk.settle_review(row.id, RefundRow(charged[0]), deadline_s=0.5)
    return True


async def scenario_refund_refused(run: Run) -> None:
    """An abandoned sale proven charged; its refund is refused (403), sometimes after
    500s; the owner refunds it again at the end (the service takes it then). A sale that
    went to a person's review instead (another install's rows), the owner refunds from
    the review, and that refund is refused so."""
    sale = run.new_sale("refund_refused", run.next_amount())
    await abandoned_while_charged(run, sale)
    errors = run.rng.choice((0, 0, 1, 2))
    if errors:
        run.sandbox.arm_fault("error_before_commit", count=errors, operation="reverse")
        run.figures.faults["error_before_commit"] += 1
    run.sandbox.arm_fault("forbidden", operation="reverse")
    run.figures.faults["forbidden"] += 1
    sale.kinds.add("refund 403" if not errors else f"refund {errors}x500 then 403")
    await refund_tried(run, sale, lambda: not run.sandbox.faults.armed())
    if run.sandbox.faults.armed() and await owner_refunds_from_review(run, sale):
        await refund_tried(run, sale, lambda: not run.sandbox.faults.armed())
    run.sandbox.clear_faults()


async def scenario_refund_clock_step(run: Run) -> None:
    """An abandoned sale proven charged on a kiosk whose clock is hours ahead; its refund
    meets 500s and waits; NTP steps the clock back for good; the service takes refunds
    again: the refund is due within REFUND_DUE_S, timed on the service's side."""
    ahead = run.rng.choice(REFUND_STEPS_S)
    run.kiosk_offset_s = ahead
    sale = run.new_sale("refund_clock_step", run.next_amount())
    sale.kinds.add(f"refund backoff, clock stepped {-ahead / 3600:+g} h")
    await abandoned_while_charged(run, sale)
    run.sandbox.arm_fault("error_before_commit", count=10_000, operation="reverse")
    run.figures.faults["error_before_commit"] += 1

    def met_a_500() -> bool:
        """The refund went out and got a 500: it waits for its next try."""
        armed = run.sandbox.faults.armed()
        return not armed or armed[0].remaining < 10_000

    await refund_tried(run, sale, met_a_500)
    if not met_a_500() and await owner_refunds_from_review(run, sale):
        await refund_tried(run, sale, met_a_500)
    backing_off = met_a_500()
    run.kiosk_offset_s = 0.0  # NTP steps the clock back to the true time, for good
    run.sandbox.clear_faults()
    if not backing_off:
        # no refund went out before the step: the sale was not proven charged (in a
        # person's review, say, when another install's rows make its row doubtful). No
        # backoff met the step, so there is nothing to time; the owner's refund at the end
        # of the run is not this figure (timed, it read as a refund minutes late)
        sale.refund_step_missed = where_the_sale_is(run, sale)
        return
    sale.refund_recovered = time.monotonic()
    charged = [t.id for t in run.sandbox.transactions() if t.wallet_id == sale.wallet_id]
    # the settler runs as it does between sales; the refund is timed on the service's
    # side (`reversed_at`) by the judge, so a slow one is seen even if it lands later
    await refund_tried(
        run, sale, lambda: bool(charged) and charged[0] in run.sandbox.reversed_at, within_s=3.0
    )


def outbox_row(conn: Any, sale: Sale) -> Any:
    """The kiosk's outbox row of `sale` (found by its token's digest), or None."""
    digest = sales_sql.token_digest(sale.token)
    rows = sales_sql.list_intents(conn, include_final=True)
    return next((r for r in rows if r.token_sha256 == digest), None)


def where_the_sale_is(run: Run, sale: Sale) -> str:
    """The sale's state in the kiosk's outbox, with its review's reason ("needs_review:
    foreign_activity")."""

    def find(conn: Any) -> str:
        row = outbox_row(conn, sale)
        if row is None:
            return "no outbox row"
        review = reviews_sql.review_of(conn, row.id)
        if row.state is IntentState.NEEDS_REVIEW and review is not None:
            return f"{row.state}: {review[0]}"
        return str(row.state)

    return run.desk.ledger.read(find)


async def scenario_send_held(run: Run) -> None:
    """The sale commits and its reply is lost; then the charge endpoint answers nothing
    for minutes (each send times out, or its connection drops) while the history answers;
    sometimes the kiosk's wall clock is stepped by hours right after the first send (NTP),
    or the service's clock is minutes off. The cashier's answer is timed from the commit,
    the moment the history can show the charge."""
    sale = run.new_sale("send_held", run.next_amount())
    sale.held = True
    silence = run.rng.choice(("delay", "drop_after_commit"))
    step = run.rng.choice((None, None, *KIOSK_STEPS_S))
    offset = run.rng.choice((None, None, *CLOCK_OFFSETS_S))
    if offset is not None:
        run.sandbox.set_clock_offset(offset)
        sale.kinds.add(f"held, service clock {offset / 60:+g} min")
    if step is not None:
        sale.kinds.add(f"held, kiosk clock stepped {step / 3600:+g} h")
    sale.kinds.add(f"held, sends {'time out' if silence == 'delay' else 'dropped'}")
    run.sandbox.arm_fault("drop_after_commit", operation="charge")
    run.sandbox.outage_after_next_fault(HELD_OUTAGE_S, silence, operations=("charge",))
    run.figures.faults.update(("drop_after_commit", "charge endpoint unreachable"))
    run.sandbox.current = sale
    result = await run.desk.charge(sale.amount, sale.token, deadline_s=0.4)
    if step is not None:
        run.kiosk_offset_s = step  # NTP steps the clock mid-sale
    await answer_or_abandon(run, sale, result, run.held_patience_s)
    run.kiosk_offset_s = 0.0  # synced for the next sale
    run.sandbox.end_outage()


def repair(run: Run, username: str, password: str) -> None:
    """The owner pairs the kiosk as `username` (`qrpos pair`, the owner's screen): the desk
    gets a new client (`ChargeDesk.replace_client`, as the till's `install_client` does)
    and the `qrpos` command its credential. The second install shares the kiosk's
    credentials, so it is paired the same way."""
    url, url2 = run.urls
    client = TerminalClient(url, username, password, timeout_s=CLIENT_TIMEOUT_S)
    client2 = TerminalClient(url2, username, password, timeout_s=CLIENT_TIMEOUT_S)
    run.clients += [client, client2]
    run.desk.replace_client(client)
    run.desk2.replace_client(client2)
    repair_env(run.env, username, password)
    run.username = username
    if username not in run.usernames:
        run.usernames.append(username)


async def scenario_repair(run: Run) -> None:
    """A sale commits and its reply is lost, the service then answers nothing for 1-4 s,
    and the owner re-pairs the kiosk before the sale has its answer. To another terminal:
    the new terminal cannot send the old key (a new charge) nor read the old history, so
    the sale must go to a person (`other_terminal`), and the owner names its charge from
    the truth at the end. To the same terminal with a rotated password: the sale goes on
    under the new password (sometimes after the kiosk met the old one's 401) and its key's
    replay proves it. Sometimes the cashier abandoned the sale first (the kiosk watches
    its history): cut off from it by another terminal, it goes to a person too, and the
    owner has the old terminal's charge refunded. Every draw is from `run.side`."""
    rng = run.side
    same = rng.random() < REPAIR_SAME_TERMINAL
    meet_401 = same and rng.random() < 0.5
    abandon = rng.random() < REPAIR_ABANDONED
    sale = run.new_sale("repair", rng.choice(SET_PRICES))
    sale.kinds.discard("repair")
    how = "another terminal" if not same else "same terminal, password rotated"
    run.sandbox.arm_fault("drop_after_commit", operation="charge")
    outage = rng.choice(("error_before_commit", "delay"))
    run.sandbox.outage_after_next_fault(rng.uniform(1.0, OUTAGE_MAX_S), outage)
    run.figures.faults.update(("drop_after_commit", "outage"))
    run.sandbox.current = sale
    result = await run.desk.charge(sale.amount, sale.token, deadline_s=0.3)
    if abandon and result.is_open:
        await run.desk.abandon(result.intent_id)
        sale.abandoned = True
        run.figures.abandoned += 1
        sale.kinds.add("re-paired after an abandon")
    if same:
        password = run.sandbox.rotate_password(run.username)
        username = run.username
        if meet_401 and result.is_open and not sale.abandoned:
            # the owner pairs once the till shows the 401: the service answers again,
            # and the kiosk's next send under the old password is refused
            await asyncio.sleep(run.sandbox.outage_left_s())
            result = await run.desk.resolve(result.intent_id, deadline_s=1.0)
            if result.state is IntentState.CREDENTIALS_REJECTED:
                how += ", 401 met"
    else:
        paired = run.sandbox.create_terminal("m_demo")
        username, password = paired.username, paired.password
    repair(run, username, password)
    run.figures.repairs[how] += 1
    sale.kinds.add(f"re-paired, {how}")
    if sale.abandoned:
        await run.desk.recover(deadline_s=1.0)  # the settler's next pass, as between sales
    else:
        await answer_or_abandon(run, sale, result, run.patience_s)


async def scenario_kill(run: Run) -> None:
    sale = run.new_sale("kill", run.next_amount())
    sale.killed = True
    run.sandbox.current = sale
    arm_random_faults(run)
    run.figures.kills += 1
    await asyncio.to_thread(killed_sale, run.env, sale.amount, sale.token, run.rng)
    # the resumed command may run out of time with the sale still open (a fault is still
    # armed): the till shows it, and the cashier waits for its answer or abandons it
    # before the next sale can start, as `sell` does
    for row in run.desk.ledger.read(sales_sql.open_intents):
        result = await run.desk.resolve(row.id, deadline_s=2.0)
        while result.is_open and time.monotonic() - sale.started < run.patience_s:
            result = await run.desk.resolve(row.id, deadline_s=2.0)
        if result.is_open:
            sale.gave_up = sale.abandoned = True
            run.figures.abandoned += 1
            await run.desk.abandon(row.id)


SCENARIO_RUNS = {
    "faults": scenario_faults,
    "clock": scenario_clock,
    "outage_before_commit": scenario_outage_before_commit,
    "abandon_then_same": scenario_abandon_then_same,
    "second_install": scenario_second_install,
    "trickle": scenario_trickle,
    "kiosk_clock": scenario_kiosk_clock,
    "refund_refused": scenario_refund_refused,
    "refund_clock_step": scenario_refund_clock_step,
    "send_held": scenario_send_held,
    "kill": scenario_kill,
    "repair": scenario_repair,
}


async def crashed(run: Run, scenario: str, exc: Exception) -> None:
    """The ledger raised in the middle of a sale: count it (the run fails), and do what a
    cashier does with a till that crashed on a sale, so that the campaign goes on and
    judges the money: the clock is synced, the service answers again, the sale is
    abandoned (never sent again, its history watched)."""
    sale = run.sales[-1] if run.sales else None
    run.figures.crashes += 1
    if len(run.figures.examples["crashes"]) < 5:
        where = f"{scenario} sale of {sale.amount} MNT" if sale else scenario
        text = f"{where}: {type(exc).__name__}: {exc}"
        run.figures.examples["crashes"].append(text[:300])
    run.kiosk_offset_s = 0.0
    run.sandbox.clear_faults()
    run.sandbox.end_outage()
    if sale is not None and sale.answered is None:
        sale.gave_up = sale.abandoned = True
        run.figures.abandoned += 1
    for row in run.desk.ledger.read(sales_sql.open_intents):
        await run.desk.abandon(row.id)


async def owner_settles_reviews(run: Run, ledgers: dict[int, Ledger]) -> None:
    """The owner decides each review from the truth (the sandbox's wallets, charged by any
    terminal the kiosk was paired to). A sale that went out under an earlier pairing has
    its row in a history the kiosk cannot read, so its review cannot offer it: the owner
    names it (`qrpos outbox review N --charged TX`), as read from the service's dashboard."""
    sale_of = {sales_sql.token_digest(s.token): s for s in run.sales}
    truth = {s.wallet_id: [] for s in run.sales}  # type: dict[str, list[str]]
    for tx in run.sandbox.transactions():
        if tx.wallet_id in truth and tx.username in run.usernames:
            truth[tx.wallet_id].append(tx.id)
    for install, desk in ((1, run.desk), (2, run.desk2)):
        refused = {
            v.transaction_id
            for v in outbox_views(ledgers[install], include_final=True)
            if v.kind == "reversal" and v.state == "refused"
        }
        for review in desk.listing.reviews():
            intent_id = int(review.intent.id)
            row = ledgers[install].read(lambda c, i=intent_id: sales_sql.get_intent(c, i))
            sale = sale_of.get(row.token_sha256) if row else None
            run.figures.reviews += 1
            run.figures.review_reasons[f"{review.reason}: {sale.scenario if sale else '?'}"] += 1
            if not reason_has_words(review.reason):
                run.figures.reviews_without_reason += 1
            its_refund_refused = row is not None and row.tx_id in refused
            if sale is not None and its_refund_refused and review.reason != "refund_refused":
                examples = run.figures.examples["refund_refused_unsaid"]
                shown = len(examples)
                run.figures.count("refund_refused_unsaid", sale, row)
                if len(examples) > shown:
                    examples[-1] += f"; reviewed as {review.reason}"
            if sale is None:
                run.figures.reviews_without_truth += 1
                continue
            charged = truth[sale.wallet_id]
            offered = {c.transaction.id for c in review.candidates}
            # sent under an earlier pairing: the kiosk cannot read that terminal's history
            elsewhere = row is not None and row.username not in (None, run.username)
            if not charged:
                decision: Any = MarkNotCharged()
            elif charged[0] in offered or elsewhere:
                decision = RefundRow(charged[0]) if sale.abandoned else MarkCharged(charged[0])
                run.figures.reviews_named += charged[0] not in offered
            else:
                # the sale's own row is not offered: say which review, for whoever reads it
                examples = run.figures.examples["reviews_without_truth"]
                before = len(examples)
                run.figures.count("reviews_without_truth", sale, row)
                if len(examples) > before:
                    own = charged[0]
                    holder = ledgers[install].read(
                        lambda c, t=own: c.execute(
                            "SELECT id, state FROM charge_intent WHERE tx_id = ?", (t,)
                        ).fetchone()
                    )
                    tx = next(t for t in run.sandbox.transactions() if t.id == own)
                    made = datetime.fromtimestamp(row.created_at, UTC) if row else None
                    examples[-1] += (
                        f", review {review.reason}, {len(offered)} rows offered; its charge "
                        f"{own} created {tx.created_at} (sale made {made}), held by "
                        f"{tuple(holder) if holder else 'no intent'}"
                    )
                continue
            try:
                await desk.settle_review(intent_id, decision)
            except ReviewRefused as exc:  # the truth, and the kiosk will not take it
                examples = run.figures.examples["reviews_refused"]
                shown = len(examples)
                run.figures.count("reviews_refused", sale, row)
                if len(examples) > shown:
                    examples[-1] += f", review {review.reason}: {decision} refused: {exc}"[:300]
                continue
            run.figures.reviews_settled += 1


def plan(
    charges: int,
    kills: bool,
    rng: random.Random,
    held_every: int = HELD_EVERY,
    without: tuple[str, ...] = (),
    *,
    repair_every: int = 0,
    side: random.Random | None = None,
    only: tuple[str, ...] = (),
) -> list[str]:
    """Scenarios in shuffled rounds, so that every one appears in any short run (but the
    ones left `without`, e.g. a canteen with no second install; or `only` those named).

    A re-pairing (every `repair_every` rounds) is put in its round at a place drawn from
    `side`, after the round's shuffle: `rng` draws what it drew before re-pairings were
    part of the campaign."""
    if only:
        kinds: tuple[str, ...] = only
    else:
        kinds = tuple(k for k in SCENARIOS if k not in without) + (("kill",) if kills else ())
    order: list[str] = []
    rounds = 0
    while len(order) < charges:
        round_ = list(kinds)
        if not only and rounds % OUTAGE_BEFORE_COMMIT_EVERY == 0:
            round_.append("outage_before_commit")
        if not only and held_every and rounds % held_every == 0:
            round_.append("send_held")
        repairs = not only and repair_every and rounds % repair_every == 0
        rounds += 1
        rng.shuffle(round_)
        if repairs and "repair" not in without:
            round_.insert((side or rng).randint(0, len(round_)), "repair")
        order.extend(round_)
    return order


async def campaign(
    charges: int,
    kills: bool,
    seed: int,
    workdir: Path,
    *,
    patience_s: float = PATIENCE_S,
    stop_after: int | None = None,
    held_every: int = HELD_EVERY,
    held_patience_s: float = HELD_PATIENCE_S,
    minutes: float | None = None,
    without: tuple[str, ...] = (),
    repair_every: int = REPAIR_EVERY,
    only: tuple[str, ...] = (),
) -> Figures:
    """Run the campaign, let the owner settle the reviews, and judge from the sandbox.

    `patience_s`: how long the cashier waits for an answer (the suite's slice waits less;
    a sale still open then counts as never answered, "inf"); `held_patience_s` the same
    for a send_held sale, `held_every` how often one is made (every N rounds, 0: never);
    `minutes`: a time box: no new sale after it, then the run settles and is judged;
    `repair_every`: a re-pairing mid-sale every N rounds (0: never); `only`: these
    scenarios alone (e.g. `("repair",)`).
    """
    rng = random.Random(seed)
    figures = Figures()
    started = time.monotonic()
    sandbox = CampaignSandbox(SimulatorOptions(rate_limit_enabled=False))
    term = sandbox.create_terminal("m_demo")
    app, other_door = create_app(sandbox), FaultlessDoor(create_app(sandbox))
    with serve_in_thread(app) as url, serve_in_thread(other_door) as url2:
        env = cli_env(workdir, url, term.username, term.password)
        ledgers = {
            1: Ledger.open(workdir / "state" / "outbox.sqlite3"),
            2: Ledger.open(workdir / "install2" / "outbox.sqlite3"),
        }
        client = TerminalClient(url, term.username, term.password, timeout_s=CLIENT_TIMEOUT_S)
        client2 = TerminalClient(url2, term.username, term.password, timeout_s=CLIENT_TIMEOUT_S)
        desk2 = ChargeDesk(ledgers[2], client2, policy=POLICY)
        run = Run(
            rng,
            sandbox,
            term.username,
            desk2,
            desk2,
            env,
            figures,
            patience_s=patience_s,
            held_patience_s=held_patience_s,
            urls=(url, url2),
            side=random.Random(f"{seed}:repair"),
        )
        run.desk = desk = ChargeDesk(ledgers[1], client, policy=POLICY, clock=run.kiosk_clock)
        try:
            last = min(charges, stop_after or charges)
            order = plan(
                charges,
                kills,
                rng,
                held_every,
                without,
                repair_every=repair_every,
                side=run.side,
                only=only,
            )
            for scenario in order:
                if sum(1 for s in run.sales if s.install == 1) >= last:
                    break
                if minutes is not None and time.monotonic() - started > minutes * 60:
                    figures.time_boxed = minutes
                    break
                try:
                    await SCENARIO_RUNS[scenario](run)
                except Exception as exc:  # the kiosk's own code raised: damage, counted
                    await crashed(run, scenario, exc)
                sandbox.current = None
                sandbox.clear_faults()
                sandbox.end_outage()
                # what earlier runs left is settled before the next sale, as the kiosk does
                # (briefly: watched abandons keep looking until the ledger's ceiling)
                await desk.recover(deadline_s=0.5)
            await asyncio.sleep(POLICY.settle_s)
            # the kiosk's settler keeps going all day: before judging, keep resolving until
            # nothing is open or the ledger's own ceiling has passed (a sale abandoned in the
            # last scenario is still watched; judging it then would call its charge lost)
            until = POLICY.absent_after_s + POLICY.settle_s + 10.0
            await desk.recover(deadline_s=until, patient=True)
            await desk2.recover(deadline_s=until, patient=True)
            await owner_settles_reviews(run, ledgers)
            judge(sandbox, run.usernames, run.sales, ledgers, figures)
            checks = {ledger.integrity_check() for ledger in ledgers.values()}
            figures.integrity = checks.pop() if len(checks) == 1 else ", ".join(sorted(checks))
        finally:
            for each in (client, client2, *run.clients):
                await each.aclose()
            for ledger in ledgers.values():
                ledger.close()
    figures.charges = sum(1 for s in run.sales if s.install == 1)
    figures.seconds = time.monotonic() - started
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--charges", type=int, default=200)
    parser.add_argument("--kills", action="store_true", help="also SIGKILL `qrpos charge`")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="40 sales with kills")
    parser.add_argument(
        "--stop-after",
        type=int,
        default=None,
        help="replay the first N sales of a --charges run exactly (the same plan, seed and "
        "choices), then judge: a case seen at sale #112 of a 1000-sale run takes minutes",
    )
    parser.add_argument(
        "--held-every",
        type=int,
        default=HELD_EVERY,
        metavar="N",
        help="a send_held sale (its later sends cannot get through) every N rounds; 0: none",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="a time box: take no new sale after this many minutes, then settle and judge "
        "what was sold (a loaded machine's run still ends with a judged report)",
    )
    parser.add_argument(
        "--repair-every",
        type=int,
        default=REPAIR_EVERY,
        metavar="N",
        help="the owner re-pairs the kiosk mid-sale every N rounds; 0: never (the plan an "
        "older seed made: sales numbered as before re-pairings were added)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        choices=tuple(SCENARIO_RUNS),
        metavar="SCENARIO",
        help="run only this scenario (repeatable): --only repair",
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=(*SCENARIOS, "repair"),
        metavar="SCENARIO",
        help="leave a scenario out (repeatable): --without second_install is a canteen "
        "with one install",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep the outboxes in this folder (qrpos --state-dir DIR/state outbox list)",
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    charges = 40 if args.quick else args.charges
    logging.disable(logging.CRITICAL)  # the faults make the sandbox and client log a lot
    with contextlib.ExitStack() as stack:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            workdir = args.keep
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="qrpos-")))
        figures = asyncio.run(
            campaign(
                charges,
                args.kills or args.quick,
                seed,
                workdir,
                stop_after=args.stop_after,
                held_every=args.held_every,
                minutes=args.minutes,
                without=tuple(args.without),
                repair_every=args.repair_every,
                only=tuple(args.only),
            )
        )
    print(f"fault campaign (seed {seed})")
    print(figures.report())
    print("RESULT:", "ok" if figures.ok else "FAILED")
    return 0 if figures.ok else 1


if __name__ == "__main__":
    sys.exit(main())
