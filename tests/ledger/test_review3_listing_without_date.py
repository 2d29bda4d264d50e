"""Review 3 of issue 47: a look-up whose pages carry no `Date` skips the probe for rows
stamped ahead of the service's clock (`lookup.look_up`: `if offset is None: return ...`),
yet its rows are judged as a complete look, absence included.

bd329c6's story (the till simulator's seed 74): the service's clock went back before this
kiosk ever talked to it, so it stamps commits at its old high-water mark, past every window
its `Date` places. Here the kiosk measured the service's clock on the sale's own replies
(they carry a `Date`), but the history's answers come through a proxy that drops the
`Date` header (HTTP lets a server without a clock omit it; a cache may strip it). The
probe that finds the mark is never sent, and the abandoned sale, whose charge is stamped
600 s past its window, was proven absent: "not charged" while the wallet holds the money
(this test failed so before the fix: "abandoned; the history shows it was not charged").
A look without a `Date` may still prove by its rows; its silence no longer proves absence.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.simulator.testing import asgi_transport

AMOUNT = 4500


class _NoDateOnListings(httpx.AsyncBaseTransport):
    """The sandbox in-process, behind a proxy that drops `Date` from the history's pages."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.method == "GET" and request.url.path == "/v1/transactions":
            del response.headers["date"]
        return response


def _policy() -> RetryPolicy:
    return RetryPolicy.testing(max_sends=3, settle_s=0.3, lookup_interval_s=0.02, sleep=True)


async def test_a_history_without_a_date_never_proves_a_charged_sale_absent(
    ledger: Ledger,
    sim_app: object,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    transport = _NoDateOnListings(asgi_transport(sim_app))
    async with TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    ) as client:
        # the service commits a charge (another till's, another amount) on its clock...
        other = sandbox.create_wallet(100_000)
        assert isinstance(await client.charge(other.qr_token, 7500, str(uuid.uuid4())), Approved)
        # ...then its clock goes back ten minutes
        sandbox.set_clock_offset(-600.0)
        desk = ChargeDesk(ledger, client, policy=_policy())
        warm = await desk.charge(100, sandbox.create_wallet(1_000).qr_token, deadline_s=5)
        assert warm.charged  # its reply's `Date` measured the service's clock
        sandbox.arm_fault("error_after_commit", count=10**6, operation="charge")
        result = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=1.5)
        assert result.is_open, result
        [charge] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
        after = await desk.abandon(result.intent_id)
        for _ in range(60):  # the watch of an abandoned sale: one look each pass
            after = await desk.resolve(result.intent_id, deadline_s=10)
            if after.state is not IntentState.ABANDONED or after.charged is not None:
                break
            await asyncio.sleep(0.05)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == wallet.balance_mnt - AMOUNT
    assert after.charged is not False, (after, charge.id)
