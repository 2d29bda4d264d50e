"""The owner sets quick prices on screen, behind the manager PIN, typing at full speed:
every key lands in its field; a wrong PIN stores nothing; an emptied price clears the
slot; the kiosk's next amount screen charges what was stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from owner_harness import PIN, OwnerHost
from textual import events
from textual.widgets import Static

from pilot_wait import until
from qrpos.quick_prices import QuickPrice, load_prices, set_price
from qrpos.tui.screens.owner.prices import PricesScreen
from qrpos.tui.services import KioskServices

NAMES = {"enter": "\r", "tab": "\t", " ": " "}


def burst(app: Any, keys: list[str]) -> None:
    """Every key queued at once, none waiting for the screen to draw (full speed)."""
    for key in keys:
        name = "space" if key == " " else key
        app.post_message(events.Key(name, NAMES.get(key, key)))


def answer(screen: PricesScreen) -> str:
    return str(screen.query_one("#answer", Static).render())


async def test_a_price_typed_at_full_speed_is_stored_whole(
    host: Callable[..., OwnerHost], services: KioskServices
) -> None:
    state_dir = services.config.state_dir
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        screen = pilot.app.screen
        assert isinstance(screen, PricesScreen)
        burst(pilot.app, ["2", "enter", *"6500", "enter", *"Set B", "enter", *PIN, "enter"])
        await until(pilot, lambda: "F4 now charges 6,500 ₮" in answer(screen), "saved")
        assert load_prices(state_dir) == {2: QuickPrice(2, 6500, "Set B")}
        assert "6,500 ₮  Set B" in str(screen.query_one("#slots", Static).render())


async def test_a_wrong_pin_stores_nothing_and_an_empty_price_clears_the_slot(
    host: Callable[..., OwnerHost], services: KioskServices
) -> None:
    state_dir = services.config.state_dir
    set_price(state_dir, 1, 4500, "Set A")
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        screen = pilot.app.screen
        assert isinstance(screen, PricesScreen)
        burst(pilot.app, ["1", "enter", "tab", "tab", *"0000", "enter"])
        await until(pilot, lambda: "Wrong PIN" in answer(screen), "refused")
        assert load_prices(state_dir) == {1: QuickPrice(1, 4500, "Set A")}
        # the slot's price came up to be changed: emptied, with the PIN, it clears
        screen.query_one("#price").value = ""  # type: ignore[attr-defined]
        screen.query_one("#pin").focus()
        burst(pilot.app, [*PIN, "enter"])
        await until(pilot, lambda: "F3 is empty now" in answer(screen), "cleared")
        assert load_prices(state_dir) == {}
