"""The owner key (F2 or o) in the kiosk opens the owner's menu once: pressed again on
an owner screen it stacks no second menu, and Esc walks back to the amount."""

from __future__ import annotations

from pathlib import Path

from kiosk_harness import FAST, make_services

from pilot_wait import until
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp
from qrpos.tui.screens.owner.history import HistoryScreen
from qrpos.tui.screens.owner.menu import OwnerMenuScreen


async def test_the_owner_key_on_an_owner_screen_opens_no_second_menu(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    services, ledger = make_services(tmp_path, live_url, terminal)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: type(app.screen).__name__ == "AmountScreen", "ready")
        await pilot.press("f2")
        await until(pilot, lambda: isinstance(app.screen, OwnerMenuScreen), "menu")
        await pilot.press("1")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        await pilot.press("o", "f2")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HistoryScreen)
        assert sum(isinstance(s, OwnerMenuScreen) for s in app.screen_stack) == 1
        await pilot.press("escape", "escape")
        await until(pilot, lambda: type(app.screen).__name__ == "AmountScreen", "back")
    ledger.close()
