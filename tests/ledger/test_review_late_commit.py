"""A review waits until late commits had their time: else it offers the rows of the moment
and misses the sale's own charge, committed a little after the client gave up.

Found by the 1000-sale campaign (5 of 1000 reviews): a `delay` fault made the service commit
0.1-0.4 s after the 0.5 s client timeout; the look-up ran at once, met two strangers' rows
of the amount, and opened a review without the sale's own row. The owner could not mark
the sale charged (only offered rows can be chosen). Real HTTP over loopback: in-process,
a timed-out request is cancelled and never commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials

CLIENT_TIMEOUT_S = 0.3
COMMIT_LATE_S = 0.8  # the service commits this long after the request arrived


@pytest.fixture
async def impatient_client(
    live_url: str, terminal: TerminalCredentials
) -> AsyncIterator[TerminalClient]:
    client = TerminalClient(
        live_url, terminal.username, terminal.password, timeout_s=CLIENT_TIMEOUT_S
    )
    yield client
    await client.aclose()


@pytest.mark.parametrize("strangers", [2, 3])
@pytest.mark.parametrize("max_sends", [1, 2])
@pytest.mark.parametrize("key_answers", [True, False], ids=["key_answers", "key_silent"])
async def test_a_late_commit_is_never_left_out_of_the_sales_answer(
    ledger: Ledger,
    impatient_client: TerminalClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    strangers: int,
    max_sends: int,
    key_answers: bool,
) -> None:
    """Either the key's replay proves the sale, or the review offers its own row."""
    # a silent key: resending stopped (its horizon passed) before the late commit landed
    horizon = 3600.0 if key_answers else CLIENT_TIMEOUT_S * max_sends
    policy = RetryPolicy.testing(
        max_sends=max_sends,
        settle_s=COMMIT_LATE_S + 0.7,
        resend_horizon_s=horizon,
        lookup_interval_s=0.1,
        sleep=True,
    )
    desk = ChargeDesk(ledger, impatient_client, policy=policy)
    for _ in range(strangers):  # another install's charges of the same amount, just now
        sandbox.seed_charge(terminal.username, 1_500, datetime.now(UTC))
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("delay", count=max_sends, seconds=COMMIT_LATE_S, operation="charge")
    result = await desk.charge(1_500, wallet.qr_token, deadline_s=10)
    await asyncio.sleep(COMMIT_LATE_S)  # whatever the kiosk said, the commit has landed now
    own = [
        tx.id
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet.wallet_id and tx.type is spec.TxType.CHARGE
    ]
    assert len(own) == 1  # committed once, after the client gave up
    if key_answers:
        assert result.state is IntentState.APPROVED
        assert result.transaction is not None and result.transaction.id == own[0]
        return
    assert result.state is IntentState.NEEDS_REVIEW and result.charged is None
    [review] = desk.listing.reviews()
    # the strangers' rows, once seen, are known as another install's and not offered
    assert own[0] in [c.transaction.id for c in review.candidates]
