"""A shop may keep the takings and the history behind the manager PIN: the screen opens
only after the PIN, a wrong one is refused with the attempts left (the same pause as
refunds), Esc goes back to the menu; a screen the shop did not guard opens at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from owner_harness import PIN, OwnerHost

from pilot_wait import until
from qrpos.config import ConfigError, load_config
from qrpos.tui.screens.owner.endofday import EndOfDayScreen
from qrpos.tui.screens.owner.history import HistoryScreen
from qrpos.tui.screens.owner.menu import OwnerMenuScreen
from qrpos.tui.screens.owner.pin import PinDialog
from qrpos.tui.services import KioskServices


async def test_a_guarded_history_opens_only_after_the_pin(
    host: Callable[..., OwnerHost], services: KioskServices
) -> None:
    services.config = dataclasses.replace(services.config, owner_pin_screens=frozenset({"history"}))
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        dialog = pilot.app.screen
        assert isinstance(dialog, PinDialog)
        await pilot.press(*"0000", "enter")
        await until(pilot, lambda: "Wrong PIN" in (dialog.outcome or ""), "refused")
        assert "2 attempts" in (dialog.outcome or "")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(pilot.app.screen, OwnerMenuScreen), "menu")
        await pilot.press("1", *PIN, "enter")
        await until(pilot, lambda: isinstance(pilot.app.screen, HistoryScreen), "history")
        await pilot.press("escape", "3")  # the takings were not guarded: open at once
        await until(pilot, lambda: isinstance(pilot.app.screen, EndOfDayScreen), "end of day")


async def test_an_unguarded_kiosk_asks_for_no_pin(
    host: Callable[..., OwnerHost], services: KioskServices
) -> None:
    async with host(first_poll_s=30).run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        await until(pilot, lambda: isinstance(pilot.app.screen, HistoryScreen), "history")


def test_the_guarded_screens_come_from_the_environment_or_the_file(tmp_path: Any) -> None:
    conf = tmp_path / "config.toml"
    conf.write_text('[owner]\npin_screens = ["history", "end_of_day"]\n', encoding="utf-8")
    loaded = load_config(config_path=conf, env={})
    assert loaded.owner_pin_screens == {"history", "end_of_day"}
    from_env = load_config(config_path=conf, env={"QRPOS_OWNER_PIN_SCREENS": "end_of_day"})
    assert from_env.owner_pin_screens == {"end_of_day"}
    with pytest.raises(ConfigError) as refused:
        load_config(config_path=conf, env={"QRPOS_OWNER_PIN_SCREENS": "history,takings"})
    # the log's English names the setting as the file writes it, as the en catalogue does
    assert str(refused.value) == "[owner] pin_screens takings: the screens are history, end_of_day"
    conf.write_text('[owner]\npin_screens = "history"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="must be a list"):
        load_config(config_path=conf, env={})
