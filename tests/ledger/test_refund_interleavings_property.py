"""Issue 41: refunds after an abandon, over random interleavings (hypothesis).

Sales whose replies are lost and whose history cannot be read are abandoned at the till
(some committed, some never); the refunds the kiosk then owes meet 403s, 500s and dropped
replies in any order, the settler runs between them, and NTP steps the kiosk's wall
clock by hours (forward or back, for good) at any point, a refund's backoff included.
Then the service recovers and the settler runs as it does all day.

Invariants, against the sandbox's own record (which wallet paid, which charge was
reversed), through the desk's doors (`ChargeDesk`: the kiosk's and the CLI's) and what
`qrpos outbox list` and `qrpos outbox review` read:
- no wallet is charged twice, and no charge is refunded that was not owed;
- every abandoned sale whose customer was charged is refunded (on the service's proof,
  and the outbox says so) or waits in a person's review that says why in words;
- the kiosk never says "refunded" while the charge stands, nor "not charged" while it
  stands.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qrpos import spec
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy, outbox_views, review_views
from qrpos.present.i18n import languages, load_catalogue
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app
from qrpos.simulator.testing import asgi_transport

#: what a refund may meet: 403 (refused), 500 (nothing applied), a reply lost after the
#: refund was applied (the retry's 409 proves it)
REFUND_FAULTS = ("forbidden", "error_before_commit", "drop_after_commit")
#: NTP's steps of the kiosk's wall clock, seconds (issue 41: back 2 h)
STEPS_S = (-2 * 3600.0, -45 * 60.0, 3 * 3600.0)
REFUNDED = ("reversed_after_abandon", "refunded_per_review")
#: a watched abandoned sale is looked up again this long after its last look-up; the
#: story's end lets that much real time pass before each pass of the settler
LOOK_EVERY_S = 0.2
#: waits are counted, not slept (`sleep=False`): a pass of the settler takes no wait
#: longer than what is left of its deadline, so a refund that met a 500 in a pass of
#: SETTLE_S is left waiting for its backoff (up to 4 s) across what happens next; once
#: the service has recovered, a pass of RECOVERED_S may take any wait the policy asks for
POLICY = RetryPolicy.testing(
    max_sends=3, base_delay_s=1.0, max_delay_s=4.0, lookup_interval_s=LOOK_EVERY_S
)
SETTLE_S = 0.5
RECOVERED_S = 20.0


@dataclass(frozen=True)
class Sell:
    """A sale whose reply and retries are 500s and whose history cannot be read; the
    cashier abandons it. `committed`: the service applied it (the customer paid)."""

    committed: bool


@dataclass(frozen=True)
class RefundFaults:
    """The next refund requests meet these, in order."""

    kinds: tuple[str, ...]


@dataclass(frozen=True)
class Step:
    """NTP steps the kiosk's wall clock by `seconds`, for good."""

    seconds: float


@dataclass(frozen=True)
class Settle:
    """The kiosk's settler runs one pass (as between sales); `history_reads` False: the
    history answers 500 meanwhile (the look-up is tried, and its time stored)."""

    history_reads: bool = True


Action = Sell | RefundFaults | Step | Settle

ACTIONS = st.one_of(
    st.builds(Sell, st.booleans()),
    st.builds(
        RefundFaults,
        st.lists(st.sampled_from(REFUND_FAULTS), min_size=1, max_size=3).map(tuple),
    ),
    st.builds(Step, st.sampled_from(STEPS_S)),
    st.builds(Settle, st.booleans()),
)


def has_words(reason: str) -> bool:
    return bool(reason) and all(
        f"review.reason.{reason}" in load_catalogue(lang) for lang in languages()
    )


async def settle(sandbox: Sandbox, desk: ChargeDesk, action: Settle) -> None:
    """One pass of the settler; the refund faults not yet met stay armed after it."""
    if action.history_reads:
        await desk.recover(deadline_s=SETTLE_S)
        return
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    await desk.recover(deadline_s=SETTLE_S)
    kept = [f for f in sandbox.faults.armed() if f.operation == "reverse"]
    sandbox.clear_faults()
    for fault in kept:
        sandbox.arm_fault(fault.kind, count=fault.remaining, operation="reverse")


async def play(story: list[Action], workdir: Path) -> list[str]:
    """Run one story; returns what broke (empty: every invariant held)."""
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    term = sandbox.create_terminal("m_demo")
    ledger = Ledger.open(workdir / "outbox.sqlite3")
    client = TerminalClient(
        "http://127.0.0.1",
        term.username,
        term.password,
        transport=asgi_transport(create_app(sandbox)),
    )
    ahead = [0.0]
    random.seed(0)  # the backoff's jitter: one answer per story
    desk = ChargeDesk(
        ledger, client, policy=POLICY, clock=lambda: datetime.now(UTC) + timedelta(seconds=ahead[0])
    )
    sales: dict[int, str] = {}  # intent id -> wallet id
    try:
        warm = sandbox.create_wallet(1_000)
        await desk.charge(100, warm.qr_token, deadline_s=5)  # terminal id and clock known
        for action in story:
            if isinstance(action, Sell):
                wallet = sandbox.create_wallet(100_000)
                kind = "error_after_commit" if action.committed else "error_before_commit"
                sandbox.arm_fault(kind, count=1000, operation="charge")
                sandbox.arm_fault("error_before_commit", count=1000, operation="list")
                result = await desk.charge(700, wallet.qr_token, deadline_s=0.05)
                sandbox.clear_faults()
                sales[result.intent_id] = wallet.wallet_id
                if result.is_open:
                    await desk.abandon(result.intent_id)
            elif isinstance(action, RefundFaults):
                for kind in action.kinds:
                    sandbox.arm_fault(kind, operation="reverse")
            elif isinstance(action, Step):
                ahead[0] += action.seconds
            else:
                await settle(sandbox, desk, action)
        # the service recovers; the settler runs on, as it does all day
        sandbox.clear_faults()
        for _ in range(2):
            await asyncio.sleep(LOOK_EVERY_S * 1.5)
            await desk.recover(deadline_s=RECOVERED_S)
        return judged(sandbox, ledger, sales, term.username)
    finally:
        await client.aclose()
        ledger.close()
        sandbox.close()


def judged(sandbox: Sandbox, ledger: Ledger, sales: dict[int, str], username: str) -> list[str]:
    """Every broken invariant, in words (the outbox read as `qrpos outbox list --all` and
    `qrpos outbox review` read it)."""
    broken: list[str] = []
    everything = outbox_views(ledger, include_final=True)
    views = {v.id: v for v in everything if v.kind == "charge"}
    reviews = {int(r.intent.id): r.reason for r in review_views(ledger)}
    for intent_id, wallet_id in sales.items():
        charges = [
            tx
            for tx in sandbox.transactions()
            if tx.wallet_id == wallet_id and tx.type is spec.TxType.CHARGE
        ]
        view = views[str(intent_id)]
        where = f"sale #{intent_id} ({view.state})"
        if len(charges) > 1:
            broken.append(f"{where}: charged {len(charges)} times")
        reversed_ = [tx for tx in charges if tx.status is spec.TxStatus.REVERSED]
        live = [tx for tx in charges if tx.status is spec.TxStatus.COMPLETED]
        if reversed_ and view.state not in REFUNDED and intent_id not in reviews:
            broken.append(f"{where}: refunded, and the outbox does not say so")
        if view.state in REFUNDED and not reversed_:
            broken.append(f"{where}: called refunded, the charge stands")
        if live and view.state == "not_charged":
            broken.append(f"{where}: called not charged, the customer paid")
        if live and intent_id not in reviews:
            broken.append(f"{where}: abandoned and charged, neither refunded nor in review")
        if intent_id in reviews and not has_words(reviews[intent_id]):
            broken.append(f"{where}: in review without a reason in words ({reviews[intent_id]})")
    by_tx = {v.transaction_id or "": int(v.id) for v in views.values()}
    for refund in everything:
        if refund.kind != "reversal" or refund.state == "refunded":
            continue
        if by_tx.get(refund.transaction_id or "", 0) not in reviews:
            broken.append(f"refund {refund.id} {refund.state}, and nobody is asked")
    refunded = {tx.id for tx in sandbox.transactions() if tx.status is spec.TxStatus.REVERSED}
    owed = {
        tx.id
        for tx in sandbox.transactions()
        if tx.wallet_id in sales.values() and tx.type is spec.TxType.CHARGE
    }
    if refunded - owed:
        broken.append(f"refunds no sale owed: {sorted(refunded - owed)} ({username})")
    return broken


#: a story: actions around at least one sale
STORIES = st.tuples(
    st.lists(ACTIONS, max_size=3), st.booleans(), st.lists(ACTIONS, max_size=5)
).map(lambda parts: [*parts[0], Sell(parts[1]), *parts[2]])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(story=STORIES)
# issue 41's two defects, always tried: the refund refused, and the wall clock stepped
# back while the refund waits after a 500
@example(story=[Sell(True), RefundFaults(("forbidden",)), Settle()])
@example(story=[Sell(True), RefundFaults(("error_before_commit",)), Settle(), Step(-7200.0)])
# and a watched abandoned sale last looked up while the clock was 2 h ahead
@example(story=[Step(7200.0), Sell(True), Settle(False), Step(-7200.0)])
def test_every_abandoned_charged_sale_is_refunded_or_in_review_with_its_reason(
    story: list[Action],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        broken = asyncio.run(play(story, Path(folder)))
    assert broken == [], f"{story}: {broken}"
