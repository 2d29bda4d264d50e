"""A 201 that names a row the outbox already knows as something else is no proof.

`check_reply` and the holder check caught a reply whose id another sale owns, but not one
whose id the outbox knows otherwise: a charge this kiosk refunded through its queue, or a
row recorded as another install's. A reply for "another transaction id" of that kind was
approved: the sale said "paid" on the strength of a refunded (or someone else's) charge,
and its real charge went unaccounted.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, MarkCharged, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport


class Renaming(httpx.AsyncBaseTransport):
    """The real sandbox; while `tx_id` is set, every 201 names that transaction instead."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner, self.tx_id = inner, ""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code != 201 or not self.tx_id:
            return response
        body = {**json.loads(await response.aread()), "id": self.tx_id}
        return httpx.Response(201, headers={"date": response.headers["date"]}, json=body)


@pytest.mark.parametrize("known_as", ["refunded_by_us", "another_install"])
async def test_a_201_naming_a_row_known_as_something_else_goes_to_review(
    ledger: Ledger, sim_app: Any, sandbox: Sandbox, terminal: TerminalCredentials, known_as: str
) -> None:
    transport = Renaming(asgi_transport(sim_app))
    client = TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    )
    try:
        desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing(max_sends=2))
        if known_as == "refunded_by_us":
            known = sandbox.seed_charge(
                terminal.username, 500, datetime.now(UTC) - timedelta(hours=2)
            )
            assert (await desk.reverse(known, deadline_s=5)).state == "refunded"
        else:
            known = sandbox.seed_charge(terminal.username, 999, datetime.now(UTC))
            # every reply of its key lost: the key keeps its say while it may be sent (issue
            # 47), so the cashier gives up; the look-ups see the stranger's row, a person decides
            sandbox.arm_fault("drop_after_commit", count=10**6, operation="charge")
            held = await desk.charge(500, sandbox.create_wallet(1_000).qr_token, deadline_s=1)
            await desk.abandon(held.intent_id)
            sandbox.clear_faults()
            [noticed] = await desk.recover(deadline_s=5)
            assert noticed.state is IntentState.NEEDS_REVIEW and noticed.charged is None
            activity = desk.listing.foreign_activity()
            assert activity is not None and activity.tx_ids == (known,)
            desk.clear_foreign_activity()
        wallet = sandbox.create_wallet(10_000)
        transport.tx_id = known
        result = await desk.charge(500, wallet.qr_token, deadline_s=5)
        assert result.state is IntentState.NEEDS_REVIEW and result.charged is None
        assert result.transaction is None
        review = next(r for r in desk.listing.reviews() if int(r.intent.id) == result.intent_id)
        assert review.reason == "reply_mismatch"
        assert [c.transaction.id for c in review.candidates] == [known]
        # the customer was charged once, on a row of its own; the owner, reading the
        # merchant dashboard, settles the sale on it: paid, nothing refunded
        [own] = [t.id for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]
        assert own != known and sandbox.wallet(wallet.wallet_id).balance_mnt == 9_500
        transport.tx_id = ""
        settled = await desk.settle_review(result.intent_id, MarkCharged(own), deadline_s=5)
    finally:
        await client.aclose()
    assert settled.state is IntentState.CHARGED_PER_REVIEW and settled.charged is True
    assert settled.transaction is not None and settled.transaction.id == own
    assert sandbox.transaction(own).status is spec.TxStatus.COMPLETED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 9_500
