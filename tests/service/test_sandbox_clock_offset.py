"""A service whose clock is off: `createdAt`, `Date` and the list's window all move with it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from qrpos.service import Approved, Page, TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, WalletInfo

#: slack for the few milliseconds a request takes and `Date`'s whole seconds
SLACK = timedelta(seconds=5)


@pytest.mark.parametrize("offset_s", [-600.0, -150.0, 150.0, 600.0])
async def test_created_at_and_date_follow_the_service_clock(
    http_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo, offset_s: float
) -> None:
    sandbox.set_clock_offset(offset_s)
    before = datetime.now(UTC)
    outcome = await http_client.charge(wallet.qr_token, 500, str(uuid.uuid4()))
    after = datetime.now(UTC)
    assert isinstance(outcome, Approved)
    shift = timedelta(seconds=offset_s)
    for when in (outcome.transaction.created_at, outcome.exchange.server_date):
        assert when is not None
        assert before + shift - SLACK <= when <= after + shift + SLACK
    # the default window ends at the service's "now": the charge is listed either way
    page = await http_client.list_page()
    assert isinstance(page, Page)
    assert [t.id for t in page.page.transactions] == [outcome.transaction.id]
    assert page.exchange.server_date is not None
    assert abs(page.exchange.server_date - (datetime.now(UTC) + shift)) < SLACK


async def test_a_window_on_the_local_clock_misses_a_charge_the_service_dated_ahead(
    http_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    # why a kiosk must measure the offset: "now" on the Pi is before the row's createdAt
    sandbox.set_clock_offset(600.0)
    assert isinstance(await http_client.charge(wallet.qr_token, 500, str(uuid.uuid4())), Approved)
    local_now = datetime.now(UTC)
    page = await http_client.list_page(from_=local_now - timedelta(seconds=60), to=local_now)
    assert isinstance(page, Page) and page.page.transactions == ()


async def test_the_admin_api_sets_the_offset(live_url: str, sandbox: Sandbox) -> None:
    async with httpx.AsyncClient(base_url=live_url) as http:
        answer = await http.post("/_sim/clock", json={"offsetSeconds": -150})
        assert answer.status_code == 200 and answer.json() == {"offsetSeconds": -150.0}
        assert sandbox.options.clock_offset_s == -150.0
        for bad in ({"offsetSeconds": "soon"}, {"offsetSeconds": True}, {}):
            refused = await http.post("/_sim/clock", json=bad)
            assert refused.status_code == 400 and "offsetSeconds" in refused.text
    assert sandbox.options.clock_offset_s == -150.0


@pytest.mark.parametrize("offset", [float("nan"), float("inf"), True])
def test_an_offset_must_be_a_finite_number(offset: object) -> None:
    with pytest.raises(ValueError, match="clock_offset_s"):
        SimulatorOptions(clock_offset_s=offset)  # type: ignore[arg-type]
