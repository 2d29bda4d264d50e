"""One wall-clock deadline bounds every request, however slowly the reply's bytes arrive.

httpx's timeout applies to each read: a server that trickles its reply a few bytes at a
time never trips it. The sandbox's ``trickle`` fault does exactly that over real loopback
HTTP (uvicorn), after the charge has committed.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from qrpos.service import (
    AlreadyReversed,
    Approved,
    Page,
    TerminalClient,
    Unresolved,
)
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.simulator.faults import make_fault
from qrpos.simulator.testing import asgi_transport

#: the client's deadline; every trickle below takes several times as long
DEADLINE_S = 0.5

Operation = Callable[[TerminalClient], Awaitable[Any]]


@pytest.fixture(params=["loopback", "asgi"])
async def short_client(
    request: pytest.FixtureRequest, terminal: TerminalCredentials
) -> AsyncIterator[TerminalClient]:
    if request.param == "loopback":
        url = request.getfixturevalue("live_url")
        client = TerminalClient(url, terminal.username, terminal.password, timeout_s=DEADLINE_S)
    else:
        client = TerminalClient(
            "http://127.0.0.1",
            terminal.username,
            terminal.password,
            timeout_s=DEADLINE_S,
            transport=asgi_transport(request.getfixturevalue("sim_app")),
        )
    yield client
    await client.aclose()


async def test_a_trickled_charge_reply_is_unresolved_and_the_charge_did_commit(
    short_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    # ~200 bytes at 50 bytes/s: every read arrives well inside the per-read timeout
    sandbox.arm_fault("trickle", operation="charge", bytes_per_s=50)
    outcome = await short_client.charge(wallet.qr_token, 700, f"k-{uuid.uuid4()}")
    assert isinstance(outcome, Unresolved), outcome
    assert outcome.sent  # the charge may have committed: only the key or history can tell
    assert str(DEADLINE_S) in outcome.reason
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 700


async def _charge_then_list(client: TerminalClient, sandbox: Sandbox, token: str) -> Any:
    assert isinstance(await client.charge(token, 10, f"k-{uuid.uuid4()}"), Approved)
    sandbox.arm_fault("trickle", operation="list", bytes_per_s=100)
    return await client.list_page()


async def _reverse_twice(client: TerminalClient, sandbox: Sandbox, token: str) -> Any:
    charged = await client.charge(token, 10, f"k-{uuid.uuid4()}")
    assert isinstance(charged, Approved)
    tx_id = charged.transaction.id
    assert not isinstance(await client.reverse(tx_id), Unresolved)
    # the 409's one text line, 2 bytes every 0.1 s
    sandbox.arm_fault("trickle", operation="reverse", bytes_per_s=20)
    return await client.reverse(tx_id)


@pytest.mark.parametrize("operation", [_charge_then_list, _reverse_twice])
async def test_a_trickled_reply_to_any_operation_is_cut_at_the_deadline(
    short_client: TerminalClient,
    sandbox: Sandbox,
    wallet: WalletInfo,
    operation: Callable[[TerminalClient, Sandbox, str], Awaitable[Any]],
) -> None:
    outcome = await operation(short_client, sandbox, wallet.qr_token)
    assert isinstance(outcome, Unresolved), outcome


async def test_a_trickled_reply_within_the_deadline_arrives_whole(
    live_url: str, terminal: TerminalCredentials, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    # the fault slows the reply and changes nothing else: a patient client gets it all
    async with TerminalClient(live_url, terminal.username, terminal.password, timeout_s=20) as c:
        sandbox.arm_fault("trickle", operation="charge", bytes_per_s=400)
        outcome = await c.charge(wallet.qr_token, 700, f"k-{uuid.uuid4()}")
        assert isinstance(outcome, Approved) and outcome.transaction.amount_mnt == 700
        sandbox.arm_fault("trickle", operation="list", bytes_per_s=400)
        page = await c.list_page()
        assert isinstance(page, Page) and [t.id for t in page.page.transactions] == [
            outcome.transaction.id
        ]
        sandbox.arm_fault("trickle", operation="reverse", bytes_per_s=400)
        assert not isinstance(await c.reverse(outcome.transaction.id), Unresolved)
        sandbox.arm_fault("trickle", operation="reverse", bytes_per_s=400)
        assert isinstance(await c.reverse(outcome.transaction.id), AlreadyReversed)


async def test_trickle_is_armed_through_the_admin_api(live_url: str, sandbox: Sandbox) -> None:
    async with httpx.AsyncClient(base_url=live_url) as http:
        armed = await http.post(
            "/_sim/faults", json={"kind": "trickle", "operation": "list", "bytesPerSecond": 8}
        )
        assert armed.status_code == 201
        fault = armed.json()["armed"][0]
        assert (fault["kind"], fault["bytesPerSecond"], fault["operation"]) == (
            "trickle",
            8,
            "list",
        )
        refused = await http.post("/_sim/faults", json={"kind": "trickle", "bytesPerSecond": 0})
        assert refused.status_code == 400 and "bytes_per_s" in refused.text


@pytest.mark.parametrize("rate", [0, -1, float("inf"), "fast", True])
def test_a_trickle_needs_a_positive_finite_rate(rate: object) -> None:
    with pytest.raises(ValueError, match="bytes_per_s"):
        make_fault("trickle", bytes_per_s=rate)
