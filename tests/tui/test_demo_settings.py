"""`qrpos demo` keeps what a person chose: the language picked with L survives a
restart although the demo's outbox is thrown away; --state-dir and QRPOS_STATE_DIR are
honoured; a --language on the command line wins over the remembered one; the end-of-day
export is suggested in the home folder, never in the folder deleted on exit."""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from kiosk_harness import fixed_clock

from qrpos.cli.kiosk import demo_config
from qrpos.config import Config
from qrpos.tui.app import KioskApp
from qrpos.tui.services import KioskServices


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("QRPOS_STATE_DIR", raising=False)
    monkeypatch.delenv("QRPOS_LANGUAGE", raising=False)
    return home


def _args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(
        keep_state=bool(given.get("keep_state")),
        state_dir=given.get("state_dir"),
        language=given.get("language"),
    )


def _temp_dir_maker(tmp_path: Path) -> Callable[[], Path]:
    numbers = itertools.count(1)

    def make() -> Path:
        path = tmp_path / f"throwaway-{next(numbers)}"
        path.mkdir()
        return path

    return make


async def _language_after(config: Config, *, press_l: bool) -> str:
    app = KioskApp(
        KioskServices(config=config, clock=fixed_clock), live_preview=False, result_linger_s=0
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        if press_l:
            app.action_language()  # `L` (the unpaired kiosk's form would take the letter)
            await pilot.pause()
        return app.status.language


async def test_the_chosen_language_survives_a_restart_of_the_demo(
    home: Path, tmp_path: Path
) -> None:
    make = _temp_dir_maker(tmp_path)
    first = demo_config(_args(), make)
    assert first.state_dir.name == "throwaway-1" and first.language == "mn"
    assert await _language_after(first, press_l=True) == "en"
    again = demo_config(_args(), make)
    assert again.state_dir.name == "throwaway-2"  # a fresh outbox, the same person
    assert await _language_after(again, press_l=False) == "en"
    assert not list(again.state_dir.iterdir())  # the choice is not in the thrown-away folder


async def test_a_language_given_on_the_command_line_wins_over_the_remembered_one(
    home: Path, tmp_path: Path
) -> None:
    make = _temp_dir_maker(tmp_path)
    assert await _language_after(demo_config(_args(), make), press_l=True) == "en"
    pinned = demo_config(_args(language="mn"), make)
    assert pinned.language_pinned
    assert await _language_after(pinned, press_l=False) == "mn"


def test_the_state_dir_given_is_the_demos_and_keeps_its_choices(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make = _temp_dir_maker(tmp_path)
    chosen = tmp_path / "mine"
    config = demo_config(_args(state_dir=str(chosen)), make)
    assert config.state_dir == chosen and config.settings_home == chosen
    monkeypatch.setenv("QRPOS_STATE_DIR", str(tmp_path / "from-env"))
    config = demo_config(_args(), make)
    assert config.state_dir == tmp_path / "from-env"
    kept = demo_config(_args(keep_state=True), make)
    assert kept.state_dir == tmp_path / "from-env"  # the named folder wins over the default
    monkeypatch.delenv("QRPOS_STATE_DIR")
    kept = demo_config(_args(keep_state=True), make)
    assert kept.state_dir == home / ".local" / "state" / "qrpos-demo"


def test_the_export_is_suggested_in_the_home_folder(home: Path, tmp_path: Path) -> None:
    config = demo_config(_args(), _temp_dir_maker(tmp_path))
    assert config.export_home == home
    assert config.settings_home == home / ".local" / "state" / "qrpos-demo"
