"""A key that only ever met 5xx or silence gets its answer as soon as the service answers
again: the resolver resends the same key (it replays the 201 or charges once) instead of
waiting `absent_after_s` on the history (issue 10, item 7). Abandoned sales are never resent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials


def _ours(sandbox: Sandbox, terminal: TerminalCredentials) -> list[str]:
    return [tx.id for tx in sandbox.transactions() if tx.username == terminal.username]


def _policy() -> RetryPolicy:
    # a production-like ceiling for a silent service: only a resend can answer in time
    return RetryPolicy.testing(max_sends=2, absent_after_s=600.0)


@pytest.mark.parametrize("sends_in_outage", [1, 2, 5])
async def test_the_same_key_is_resent_once_the_service_answers_again(
    tmp_path: Path,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    sends_in_outage: int,
) -> None:
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=_policy())
    wallet = sandbox.create_wallet(10_000)
    # only 500s: the burst of sends (and more) meets them, and the history is unreadable
    sandbox.arm_fault("error_before_commit", count=1 + sends_in_outage, operation="charge")
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    sale = await desk.charge(700, wallet.qr_token, deadline_s=0.5)
    assert sale.is_open  # only 5xx: nothing known yet
    sandbox.clear_faults()  # the service answers again
    result = await desk.resolve(sale.intent_id, deadline_s=5.0)
    ledger.close()
    charges = _ours(sandbox, terminal)
    assert len(charges) == 1  # charged exactly once, whichever attempt committed
    assert result.state in (IntentState.APPROVED, IntentState.CHARGED_PER_HISTORY), result
    assert result.transaction is not None and result.transaction.id == charges[0]


async def test_an_abandoned_sale_is_never_resent(
    tmp_path: Path, asgi_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    desk = ChargeDesk(ledger, asgi_client, policy=_policy())
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_before_commit", count=1000, operation="charge")
    sandbox.arm_fault("error_before_commit", count=3, operation="list")
    sale = await desk.charge(700, wallet.qr_token, deadline_s=0.5)
    await desk.abandon(sale.intent_id)
    sandbox.clear_faults()
    for _ in range(3):
        await desk.recover()
    ledger.close()
    assert _ours(sandbox, terminal) == []
