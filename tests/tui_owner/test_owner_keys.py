"""The owner's keys as an owner types them: every letter shortcut works in either case,
the owner key on an owner screen never stacks a second menu, and the line under the
history follows a VAT receipt number that arrives while the row is selected."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from owner_harness import NOW, OwnerHost
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from pilot_wait import until
from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.simulator.testing import asgi_transport
from qrpos.tui.screens.owner.endofday import EndOfDayScreen, ExportDialog
from qrpos.tui.screens.owner.history import HistoryScreen
from qrpos.tui.screens.owner.menu import OwnerMenuScreen
from qrpos.tui.screens.owner.prices import PricesScreen
from qrpos.tui.screens.owner.reversal import ReversalScreen
from qrpos.tui.screens.owner.reviews import ReviewsScreen
from qrpos.tui.services import KioskServices, utc_now

OWNER_SCREENS: list[type[Screen[Any]]] = [
    OwnerMenuScreen,
    HistoryScreen,
    ReversalScreen,
    EndOfDayScreen,
    ExportDialog,
    ReviewsScreen,
    PricesScreen,
]


def _letter_keys(screen: type[Screen[Any]]) -> dict[str, str]:
    """Every letter key bound on `screen`, with the action it runs."""
    keys: dict[str, str] = {}
    for binding in screen.BINDINGS:
        assert isinstance(binding, Binding)
        for key in binding.key.split(","):
            if len(key.strip()) == 1 and key.strip().isalpha():
                keys[key.strip()] = binding.action
    return keys


@pytest.mark.parametrize("screen", OWNER_SCREENS, ids=lambda s: s.__name__)
def test_every_letter_shortcut_works_in_either_case(screen: type[Screen[Any]]) -> None:
    keys = _letter_keys(screen)
    for key, action in keys.items():
        other = key.swapcase()
        if screen is OwnerMenuScreen and key == "l":
            continue  # "L" is the app's own language key, the same action
        assert keys.get(other) == action, f"{screen.__name__}: {key!r} bound, {other!r} not"


async def test_capital_letters_do_what_the_hint_shows(
    host: Callable[..., OwnerHost], sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    sandbox.seed_charge(terminal.username, 3_000, NOW - timedelta(hours=1))
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        eod = pilot.app.screen
        assert isinstance(eod, EndOfDayScreen)
        await until(pilot, lambda: eod.eod is not None, "end of day")
        await pilot.press("left")
        await until(pilot, lambda: eod.day != NOW.date(), "the day before")
        await pilot.press("T")
        await until(pilot, lambda: eod.day == NOW.date(), "today again")
        await pilot.press("E")
        await until(pilot, lambda: isinstance(pilot.app.screen, ExportDialog), "export")
        await pilot.press("escape", "escape", "1")
        history = pilot.app.screen
        assert isinstance(history, HistoryScreen)
        table: DataTable[str] = history.query_one(DataTable)
        await until(pilot, lambda: table.row_count == 1, "history")
        await pilot.press("R")
        await until(pilot, lambda: isinstance(pilot.app.screen, ReversalScreen), "reverse")


async def test_the_receipt_line_follows_a_receipt_issued_while_the_row_is_selected(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    sim_app: Any,
    terminal: TerminalCredentials,
) -> None:
    services.clock = utc_now  # a sale of a minute ago, followed as the kiosk follows it
    tx_id = sandbox.seed_charge(
        terminal.username,
        6_000,
        utc_now() - timedelta(minutes=1),
        vat_status=spec.VatStatus.PENDING,
    )
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        history = pilot.app.screen
        assert isinstance(history, HistoryScreen)
        line = history.query_one("#selected", Static)
        await until(pilot, lambda: tx_id in str(line.render()), "row selected")
        assert str(line.render()).endswith("receipt —")
        admin = httpx.AsyncClient(transport=asgi_transport(sim_app), base_url="http://x")
        assert (await admin.post("/_sim/vat/settle")).status_code in (200, 204)
        await admin.aclose()
        history.ctx.follower.schedule(0.05)  # stands in for the 30 s timer
        receipt = sandbox.transaction(tx_id).vat_receipt_id
        assert receipt
        await until(pilot, lambda: receipt in str(line.render()), "receipt number shown")
