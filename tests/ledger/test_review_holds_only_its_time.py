"""A sale in review holds the rows of its own time, never every later row of its price.

Found by the 1,000-sale campaign (seed 2032, sale #112, replayed as #36): two sales of
4,500 ₮ sat in review; a later 4,500 ₮ sale lost its reply while another install charged
the same price around it. The reviews' windows reached the latest time the service's
clock was ever seen at ("now"), so the matching counted the two open reviews as owners of
the stranger's rows and of the sale's own row, and approved the sale on a stranger's row:
the sale's own charge was left owned by nothing, and a refund of it would have gone to
the stranger's customer. A window reaches past its sale only to a mark the service's clock
was seen to fall behind (`ClockReading.back_mark`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport


class AfterEachCommit(httpx.AsyncBaseTransport):
    """The real sandbox; after the first 409 of each sale (its own commit is in),
    `stranger` charges on the same credentials."""

    def __init__(self, inner: httpx.AsyncBaseTransport, stranger: Callable[[], None]) -> None:
        self.inner, self.stranger, self.armed = inner, stranger, False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code == 409 and self.armed:
            self.armed = False
            self.stranger()
        return response


def _own_row(sandbox: Sandbox, wallet_id: str) -> str:
    [own] = [
        tx.id
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet_id and tx.type is spec.TxType.CHARGE
    ]
    return own


async def test_an_open_review_never_explains_a_later_sales_rows(
    ledger: Ledger, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    def stranger() -> None:  # another install on these credentials sells the set menu
        sandbox.seed_charge(terminal.username, 4_500, datetime.now(UTC))

    transport = AfterEachCommit(asgi_transport(sim_app), stranger)
    client = TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    )
    policy = RetryPolicy.testing(max_sends=2, settle_s=0.4, lookup_interval_s=0.1, sleep=True)
    desk = ChargeDesk(ledger, client, policy=policy)
    try:
        # the first sale: charged, reply lost, key forgotten, a stranger's row beside its
        # own: a person decides (and stays asked while the next sales go on)
        first = sandbox.create_wallet(10_000)
        sandbox.arm_fault("drop_after_commit", operation="charge")
        sandbox.arm_fault("forget_idempotency", count=20, operation="charge")
        transport.armed = True
        held = await desk.charge(4_500, first.qr_token, deadline_s=10)
        assert held.state is IntentState.NEEDS_REVIEW
        desk.clear_foreign_activity()  # the owner re-paired the other install
        # well past the first sale's time (its settle and margins), same price again
        await asyncio.sleep(policy.settle_s + 2 * policy.window_margin_s + 2.0)
        second = sandbox.create_wallet(10_000)
        sandbox.arm_fault("drop_after_commit", operation="charge")
        sandbox.arm_fault("forget_idempotency", count=20, operation="charge")
        transport.armed = True
        result = await desk.charge(4_500, second.qr_token, deadline_s=10)
    finally:
        await client.aclose()
    own = _own_row(sandbox, second.wallet_id)
    # its own row and a stranger's, newer: which is whose is unknown, so no approval on
    # the stranger's row (the open review of the first sale cannot own either)
    assert result.transaction is None or result.transaction.id == own, result
    assert result.state is IntentState.NEEDS_REVIEW, result
    reviews = {view.intent.id: view for view in desk.listing.reviews()}
    assert str(held.intent_id) in reviews and str(result.intent_id) in reviews
    assert own in [c.transaction.id for c in reviews[str(result.intent_id)].candidates]
    # the audit trail says which rows each look-up saw (what the verdict rested on)
    looks = [a for a in desk.listing.audit(result.intent_id) if a["kind"] == "lookup"]
    assert looks and all(f"of {4_500} MNT seen" in (a["detail"] or "") for a in looks)
    assert own in looks[-1]["detail"]
