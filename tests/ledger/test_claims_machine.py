"""Hypothesis runs many sales at once (open, abandoned, in review; same and different amounts)
against a sandbox whose clock is up to 15 minutes off in either direction and whose replies
are lost, with history look-ups that fail for a while, time that passes between steps (both
clocks move on together) and the kiosk's own clock stepping (NTP after a stale boot).

Invariants, checked against the sandbox's own truth (which wallet paid which row):
- no refund of a row that is not the refunding sale's own charge;
- no sale ends "not charged" while the service holds that sale's live charge;
- no sale is charged with a transaction other than its own (wrong wallet or amount);
- at most one sale blocks the next, every row has at most one owner, and the kiosk's own
  sales never look like another install's.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from qrpos import spec
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy, refunds_sql, reviews, sales_sql, states
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app
from qrpos.simulator.testing import asgi_transport

LOST_REPLIES = ("drop_after_commit", "error_after_commit", "error_before_commit")


class ClaimsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
        self.app = create_app(self.sandbox)
        self.term = self.sandbox.create_terminal("m_demo")
        self.ledger = Ledger.open(Path(self.tmp.name) / "outbox.sqlite3")
        #: token digest -> the wallet that token belongs to (one fresh wallet per sale)
        self.wallet_of: dict[str, str] = {}
        self.kiosk_ahead_s = 0.0

    def teardown(self) -> None:
        self.ledger.close()
        self.sandbox.close()
        self.tmp.cleanup()

    def clock(self) -> Callable[[], datetime]:
        ahead = self.kiosk_ahead_s
        return lambda: datetime.now(UTC) + timedelta(seconds=ahead)

    def run(self, action: Callable[[ChargeDesk], Any]) -> Any:
        async def go() -> Any:
            client = TerminalClient(
                "http://127.0.0.1",
                self.term.username,
                self.term.password,
                transport=asgi_transport(self.app),
            )
            try:
                desk = ChargeDesk(
                    self.ledger,
                    client,
                    policy=RetryPolicy.testing(max_sends=3),
                    clock=self.clock(),
                )
                return await action(desk)
            finally:
                await client.aclose()

        return asyncio.run(go())

    def new_token(self) -> str:
        wallet = self.sandbox.create_wallet(100_000)
        self.wallet_of[sales_sql.token_digest(wallet.qr_token)] = wallet.wallet_id
        return wallet.qr_token

    def open_rows(self) -> list[states.IntentRow]:
        return self.ledger.read(sales_sql.open_intents)

    def all_rows(self) -> list[states.IntentRow]:
        return self.ledger.read(lambda c: sales_sql.list_intents(c, include_final=True))

    @initialize(server_ahead_s=st.sampled_from((-900.0, -600.0, -150.0, 0.0, 150.0, 600.0, 900.0)))
    def set_clock(self, server_ahead_s: float) -> None:
        self.sandbox.configure(clock_offset_s=server_ahead_s)

    @rule(seconds=st.sampled_from((8.0, 45.0, 400.0)))
    def time_passes(self, seconds: float) -> None:
        self.kiosk_ahead_s += seconds
        self.sandbox.configure(clock_offset_s=self.sandbox.options.clock_offset_s + seconds)

    @rule(step=st.sampled_from((-120.0, 300.0)))
    def kiosk_clock_steps(self, step: float) -> None:
        self.kiosk_ahead_s += step

    @rule(
        fault=st.sampled_from((None, *LOST_REPLIES)),
        count=st.sampled_from((1, 3, 3)),
        forget=st.booleans(),
        lists_fail=st.sampled_from((True, True, False)),
        amount=st.sampled_from((100, 100, 100, 250)),
        deadline=st.sampled_from((0.05, 2.0)),
    )
    def sell(
        self,
        fault: str | None,
        count: int,
        forget: bool,
        lists_fail: bool,
        amount: int,
        deadline: float,
    ) -> None:
        if self.open_rows():
            self.abandon_open()
        if fault is not None:
            self.sandbox.arm_fault(fault, count=count, operation="charge")
        if forget:
            self.sandbox.arm_fault("forget_idempotency", count=2, operation="charge")
        if lists_fail:
            self.sandbox.arm_fault("error_before_commit", count=1000, operation="list")
        token = self.new_token()
        self.run(lambda desk: desk.charge(amount, token, deadline_s=deadline))
        self.sandbox.clear_faults()

    @rule()
    def crash_after_commit(self) -> None:
        if self.open_rows():
            return
        token = self.new_token()
        now = self.clock()().timestamp()
        self.ledger.write(
            lambda c: sales_sql.insert_intent(
                c, idem_key=f"qrpos-crash-{token[-8:]}", token=token, amount_mnt=100, now=now
            )
        )

    @rule()
    def abandon_open(self) -> None:
        for row in self.open_rows():
            self.run(lambda desk, rid=row.id: desk.abandon(rid))  # type: ignore[misc]

    @rule(lists_fail=st.sampled_from((False, False, True)))
    def recover(self, lists_fail: bool) -> None:
        if lists_fail:
            self.sandbox.arm_fault("error_before_commit", count=1000, operation="list")
        self.run(lambda desk: desk.recover(deadline_s=2))
        self.sandbox.clear_faults()

    # --- invariants ---------------------------------------------------------------------

    def charges(self) -> dict[str, Any]:
        return {
            t.id: t
            for t in self.sandbox.transactions()
            if t.type is spec.TxType.CHARGE and t.username == self.term.username
        }

    @invariant()
    def no_refund_of_a_row_that_is_not_the_sales_own(self) -> None:
        charges = self.charges()
        rows = {r.id: r for r in self.all_rows()}
        for rev in self.ledger.read(lambda c: refunds_sql.list_reversals(c, include_final=True)):
            assert rev.intent_id is not None, rev  # the machine makes no manual refunds
            owner = rows[rev.intent_id]
            assert charges[rev.tx_id].wallet_id == self.wallet_of[owner.token_sha256], rev

    @invariant()
    def no_not_charged_while_the_service_holds_the_sales_charge(self) -> None:
        live = {t.wallet_id for t in self.charges().values() if t.status is spec.TxStatus.COMPLETED}
        for row in self.all_rows():
            if row.charged == 0:
                assert self.wallet_of[row.token_sha256] not in live, row

    @invariant()
    def every_claimed_row_is_the_sales_own_charge(self) -> None:
        charges = self.charges()
        for row in self.all_rows():
            if row.tx_id is not None:
                tx = charges[row.tx_id]
                assert tx.wallet_id == self.wallet_of[row.token_sha256], row
                assert tx.amount_mnt == row.amount_mnt, row

    @invariant()
    def every_review_of_a_charged_sale_offers_its_own_row(self) -> None:
        """The owner can always settle a review right: only offered rows can be chosen."""
        charges = self.charges()
        digest_of = {str(r.id): r.token_sha256 for r in self.all_rows()}
        for review in self.ledger.read(reviews.open_reviews):
            wallet = self.wallet_of[digest_of[review.intent.id]]
            own = {t.id for t in charges.values() if t.wallet_id == wallet}
            offered = {c.transaction.id for c in review.candidates}
            assert not own or own & offered, review

    @invariant()
    def one_open_sale_one_owner_per_row_and_no_false_foreign_activity(self) -> None:
        assert len(self.open_rows()) <= 1
        owned = [r.tx_id for r in self.all_rows() if r.tx_id]
        assert len(owned) == len(set(owned))
        foreign = self.ledger.read(
            lambda c: c.execute("SELECT count(*) FROM foreign_row").fetchone()
        )
        assert foreign[0] == 0


ClaimsMachine.TestCase.settings = settings(
    max_examples=10,
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestClaimsMachine = ClaimsMachine.TestCase
