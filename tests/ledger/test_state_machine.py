"""Hypothesis drives the outbox through random sales, faults, crashes, abandons and recoveries.

Invariants after every step: at most one sale blocks the next, no wallet is charged
twice, every sandbox charge is owned by at most one sale, and each state agrees with
`charged`. An illegal state move raises inside the store, failing the run.
"""

from __future__ import annotations

import asyncio
import collections
import tempfile
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, sales_sql, states
from qrpos.ledger.states import CHARGED_STATES
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app
from qrpos.simulator.testing import asgi_transport

NOT_CHARGED = {
    IntentState.DECLINED,
    IntentState.REFUSED,
    IntentState.TOKEN_USED,
    IntentState.NOT_CHARGED,
}
FAULTS = (
    "drop_after_commit",
    "error_before_commit",
    "error_after_commit",
    "rate_limit",
    "forget_idempotency",
)


class OutboxMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
        self.app = create_app(self.sandbox)
        self.term = self.sandbox.create_terminal("m_demo")
        self.ledger = Ledger.open(Path(self.tmp.name) / "outbox.sqlite3")
        self.tokens: list[str] = []

    def teardown(self) -> None:
        self.ledger.close()
        self.sandbox.close()
        self.tmp.cleanup()

    def run(self, action: Callable[[ChargeDesk], Awaitable[Any]]) -> Any:
        async def go() -> Any:
            client = TerminalClient(
                "http://127.0.0.1",
                self.term.username,
                self.term.password,
                transport=asgi_transport(self.app),
            )
            try:
                desk = ChargeDesk(self.ledger, client, policy=RetryPolicy.testing(max_sends=3))
                return await action(desk)
            finally:
                await client.aclose()

        return asyncio.run(go())

    def open_rows(self) -> list[states.IntentRow]:
        return self.ledger.read(sales_sql.open_intents)

    @rule(
        fault=st.sampled_from((None, *FAULTS)),
        count=st.integers(1, 4),
        amount=st.sampled_from((100, 100, 250, 999_999)),
        reuse=st.booleans(),
        deadline=st.sampled_from((0.05, 2.0)),
    )
    def sell(
        self, fault: str | None, count: int, amount: int, reuse: bool, deadline: float
    ) -> None:
        if fault is not None:
            self.sandbox.arm_fault(
                fault, count=count, **({"retry_after": 0} if fault == "rate_limit" else {})
            )
        if reuse and self.tokens:
            token = self.tokens[-1]
        else:
            token = self.sandbox.create_wallet(500_000).qr_token
            self.tokens.append(token)
        blocked = self.open_rows()

        async def sale(desk: ChargeDesk) -> None:
            try:
                await desk.charge(amount, token, deadline_s=deadline)
            except Exception as exc:
                name = type(exc).__name__
                assert name in ("UnresolvedChargeExists", "TokenAlreadyPaid", "TokenInReview"), exc
                if name == "UnresolvedChargeExists":
                    assert blocked
                elif name == "TokenInReview":  # only a code whose sale waits for a person
                    digest = sales_sql.token_digest(token)
                    assert self.ledger.read(lambda c: sales_sql.in_review_with_token(c, digest))
                else:  # only a code this outbox holds a charge of
                    digest = sales_sql.token_digest(token)
                    assert self.ledger.read(lambda c: sales_sql.paid_with_token(c, digest))

        self.run(sale)
        self.sandbox.clear_faults()

    @rule()
    def crash_after_commit(self) -> None:
        if self.open_rows():
            return
        token = self.sandbox.create_wallet(1000).qr_token
        self.tokens.append(token)
        self.ledger.write(
            lambda c: sales_sql.insert_intent(
                c,
                idem_key=f"qrpos-crash-{len(self.tokens)}",
                token=token,
                amount_mnt=10,
                now=datetime.now(UTC).timestamp(),
            )
        )

    @rule()
    def abandon_open(self) -> None:
        for row in self.open_rows():
            self.run(lambda desk, rid=row.id: desk.abandon(rid))  # type: ignore[misc]

    @rule()
    def recover(self) -> None:
        self.run(lambda desk: desk.recover(deadline_s=2))

    @invariant()
    def at_most_one_sale_blocks(self) -> None:
        assert len(self.open_rows()) <= 1

    @invariant()
    def nobody_charged_twice_and_each_charge_has_one_owner(self) -> None:
        charges = [t for t in self.sandbox.transactions() if t.type is spec.TxType.CHARGE]
        per_wallet = collections.Counter(t.wallet_id for t in charges)
        assert all(n == 1 for n in per_wallet.values())
        rows = self.ledger.read(lambda c: sales_sql.list_intents(c, include_final=True))
        owners = collections.Counter(r.tx_id for r in rows if r.tx_id)
        assert all(n == 1 for n in owners.values())
        assert set(owners) <= {t.id for t in charges}

    @invariant()
    def state_agrees_with_charged(self) -> None:
        for row in self.ledger.read(lambda c: sales_sql.list_intents(c, include_final=True)):
            if row.state in CHARGED_STATES:
                assert row.charged == 1 and row.tx_id is not None
            elif row.state in NOT_CHARGED:
                assert row.charged == 0
            elif row.is_open:
                assert row.charged is None
            if row.state not in (IntentState.PENDING, IntentState.UNRESOLVED):
                assert row.token is None or row.state is IntentState.CREDENTIALS_REJECTED


OutboxMachine.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestOutboxStateMachine = OutboxMachine.TestCase
