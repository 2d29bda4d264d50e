"""The owner's screens, in Mongolian and in English, fit 80×24: the end-of-day figures
(the VAT line too) and the history's footer never wrap, the table never scrolls sideways."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from owner_harness import NOW, OwnerHost
from textual.widgets import DataTable

from qrpos import spec
from qrpos.present.i18n import set_language
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.screens.owner.endofday import EndOfDayScreen
from qrpos.tui.screens.owner.prices import PricesScreen
from qrpos.tui.screens.owner.reversal import ReversalScreen
from qrpos.tui.screens.owner.reviews import ReviewsScreen
from screen_fit import overflows


async def settle(pilot: Any, check: Callable[[], bool]) -> None:
    for _ in range(200):
        await pilot.pause(0.02)
        if check():
            return
    raise AssertionError("the screen never loaded")


@pytest.mark.parametrize("language", ["mn", "en"])
async def test_every_owner_screen_fits_80x24(
    language: str,
    host: Callable[..., OwnerHost],
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> None:
    for hours, amount in ((5, 1_234_500), (3, 12_000), (1, 999_999)):
        sandbox.seed_charge(
            terminal.username,
            amount,
            NOW - timedelta(hours=hours),
            vat_status=spec.VatStatus.PENDING,
        )
    sandbox.seed_charge(
        terminal.username, 800, NOW - timedelta(hours=2), status=spec.TxStatus.REVERSED
    )
    set_language(language)
    problems: dict[str, list[str]] = {}
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        problems["menu"] = overflows(pilot.app.screen)
        await pilot.press("1")
        table: DataTable[str] = pilot.app.screen.query_one(DataTable)
        await settle(pilot, lambda: table.row_count == 4)
        problems["history"] = overflows(pilot.app.screen)
        await pilot.press("r")
        await settle(pilot, lambda: isinstance(pilot.app.screen, ReversalScreen))
        problems["reversal"] = overflows(pilot.app.screen)
        await pilot.press("escape", "escape", "3")
        eod = pilot.app.screen
        assert isinstance(eod, EndOfDayScreen)
        await settle(pilot, lambda: eod.eod is not None)
        problems["end_of_day"] = overflows(eod)
        await pilot.press("e")
        await pilot.pause()
        problems["export"] = overflows(pilot.app.screen)
        await pilot.press("escape", "escape", "4")
        await settle(pilot, lambda: isinstance(pilot.app.screen, ReviewsScreen))
        await pilot.pause(0.3)
        problems["reviews"] = overflows(pilot.app.screen)
        await pilot.press("escape", "5")
        await settle(pilot, lambda: isinstance(pilot.app.screen, PricesScreen))
        problems["prices"] = overflows(pilot.app.screen)
    assert {k: v for k, v in problems.items() if v} == {}
