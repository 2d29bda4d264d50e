"""A row left over when one sale could own either of two rows is not set aside as another
install's: it may be the sale's own, and the other one the stranger's.

Found by the bounded campaign once reviews waited for late commits: the first look-up saw
the sale's own row and a newer stranger's of the same amount, paired the sale with the
newer one, and recorded the other (its own) as another install's; the next look-up no
longer offered it, and the owner could not mark the sale charged.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, service_sql
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport


class AfterTheCommit(httpx.AsyncBaseTransport):
    """The real sandbox; `then` runs once, when the first 409 passes (after our commit)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, then: Callable[[], None]) -> None:
        self.inner, self.then = inner, then

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code == 409 and self.then is not None:
            self.then()
            self.then = None  # type: ignore[assignment]
        return response


@pytest.mark.parametrize("strangers", [1, 2])
async def test_the_sales_own_row_stays_a_candidate_after_the_warning(
    ledger: Ledger,
    sim_app: Any,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    strangers: int,
) -> None:
    def others_charge() -> None:  # another install's, same amount, newer than ours
        for _ in range(strangers):
            sandbox.seed_charge(terminal.username, 3_300, datetime.now(UTC))

    client = TerminalClient(
        "http://127.0.0.1",
        terminal.username,
        terminal.password,
        transport=AfterTheCommit(asgi_transport(sim_app), others_charge),
    )
    # look-ups before late commits settled see the rows; only a settled one judges
    policy = RetryPolicy.testing(max_sends=2, settle_s=0.4, lookup_interval_s=0.1, sleep=True)
    desk = ChargeDesk(ledger, client, policy=policy)
    wallet = sandbox.create_wallet(10_000)
    # charged, reply lost, the key forgotten: 409, and only the history can tell
    sandbox.arm_fault("drop_after_commit", operation="charge")
    sandbox.arm_fault("forget_idempotency", count=20, operation="charge")
    try:
        result = await desk.charge(3_300, wallet.qr_token, deadline_s=10)
    finally:
        await client.aclose()
    [own] = [
        tx.id
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet.wallet_id and tx.type is spec.TxType.CHARGE
    ]
    assert result.state is IntentState.NEEDS_REVIEW
    [review] = desk.listing.reviews()
    assert review.reason == "foreign_activity"
    assert own in [c.transaction.id for c in review.candidates]
    assert ledger.read(lambda c: service_sql.foreign_ids(c, [own])) == set()
    assert desk.listing.foreign_activity() is not None
