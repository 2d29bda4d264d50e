"""Review 5 of issue 47 (a481938, `IntentRow.probed_to`): the first look after late commits
settled bounds the sale's commits by its probe, placed on that look's `Date`. The bound is
kept for good (until the key is sent again); it was kept even when that look's `Date`
disagreed with the sale's clock (`agreed` false: the look proved nothing, but its probe
was trusted), and now is not.

Story: test_high_water_caught_up's (seed 201758: the sale's commit is stamped at a
high-water mark the kiosk never saw; the service's clock caught up before the kiosk could
look), and the first look that gets through comes back with a `Date` two days old (a
garbled or replayed `Date` from a cache or a hostile service). Its probe asks for rows
stamped from that `Date` up to `STAMPS_AHEAD_S` (a day) past it, sees none, and
`probed_to` is set two days back; the next look, with a true `Date`, keeps that bound and
its probe (now past the mark) finds nothing.

- On one boot this is safe (first test, passes): the stale `Date` reads as the service's
  clock going back, and `ClockReading.back_mark` (the last `Date` plus the boot clock's
  seconds since) reaches the mark.
- After a reboot (second test; it failed before lookup._conclude kept `probed_to` only
  from a look whose `Date` agreed): the mark's bound only counts this boot's
  uptime, which is shorter than the service's old lead, so nothing reaches the mark: the
  abandoned sale ends "abandoned; the history shows it was not charged" while its wallet
  was charged. The same story with a true `Date` passed, so the stale probe was the
  cause; the fix keeps `probed_to` only from a look whose `Date` agreed.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
from ledger_stories import abandoned_at_an_unseen_mark, until_concluded

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport

STALE = timedelta(days=2)


class _StaleDateOnce(httpx.AsyncBaseTransport):
    """The sandbox in-process; once armed, the next history page (not the probe, whose
    `limit` is 1) carries a `Date` two days old."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.armed = False
        self.staled = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        is_page = request.url.path == "/v1/transactions" and request.url.params.get("limit") != "1"
        if self.armed and request.method == "GET" and is_page and response.status_code == 200:
            self.armed = False
            self.staled += 1
            response.headers["date"] = format_datetime(datetime.now(UTC) - STALE, usegmt=True)
        return response


async def test_a_stale_date_on_the_first_settled_look_never_bounds_the_sale(
    ledger: Ledger,
    sim_app: object,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    other_till: TerminalClient,
) -> None:
    policy = RetryPolicy.testing(window_margin_s=0.5, settle_s=0.2, max_sends=1)
    transport = _StaleDateOnce(asgi_transport(sim_app))
    async with TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    ) as client:
        desk = ChargeDesk(ledger, client, policy=policy)
        abandoned, own, wallet_id = await abandoned_at_an_unseen_mark(desk, sandbox, other_till)
        transport.armed = True
        after = await until_concluded(desk, abandoned.intent_id, abandoned)
    assert transport.staled == 1
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000 - 4_500, own
    assert after.state is not IntentState.NOT_CHARGED, after.message
    assert after.charged is not False, (after, own.id)


async def test_a_stale_date_on_the_first_look_after_a_reboot_never_bounds_the_sale(
    ledger: Ledger,
    sim_app: object,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    other_till: TerminalClient,
) -> None:
    """The same, with the Pi rebooted between the abandon and the first look that gets
    through (a power cut): the new boot has measured nothing, so the stale `Date` cannot
    read as the service's clock going back (`ClockReading.back_mark` is per boot); only
    the probe's bound (`probed_to`) is left to reach the mark, and it is placed on the
    stale `Date`."""
    policy = RetryPolicy.testing(window_margin_s=0.5, settle_s=0.2, max_sends=1)
    boot_id = ["boot-before"]
    base = [time.monotonic() - 3600.0]

    def boot_clock() -> tuple[str | None, float | None]:
        return boot_id[0], time.monotonic() - base[0]

    transport = _StaleDateOnce(asgi_transport(sim_app))
    async with TerminalClient(
        "http://127.0.0.1", terminal.username, terminal.password, transport=transport
    ) as client:
        desk = ChargeDesk(ledger, client, policy=policy, boot_clock=boot_clock)
        abandoned, own, wallet_id = await abandoned_at_an_unseen_mark(desk, sandbox, other_till)
        # the Pi reboots: a new boot, up for a second (past `settle_s`)
        boot_id[0], base[0] = "boot-after", time.monotonic() - 1.0
        desk = ChargeDesk(ledger, client, policy=policy, boot_clock=boot_clock)
        transport.armed = True
        after = await until_concluded(desk, abandoned.intent_id, abandoned)
        audit = [(a["outcome"], a["detail"]) for a in desk.listing.audit(abandoned.intent_id)]
    assert transport.staled == 1
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000 - 4_500, own
    assert after.state is not IntentState.NOT_CHARGED, (after.message, audit[-3:])
    assert after.charged is not False, (after, own.id)
