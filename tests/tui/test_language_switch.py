"""`L` switches the language on every screen at once, keeps what was keyed, and the
choice survives a restart (a settings file in the state dir, written atomically)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kiosk_harness import fixed_clock
from test_snapshots import _app, _unpaired_start_done

from qrpos.cli import build_parser
from qrpos.cli.common import config_from_args
from qrpos.config import Config
from qrpos.present.i18n import current_language
from qrpos.present.language import SETTINGS_FILE, remember_language, remembered_language
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp
from qrpos.tui.screens.amount import AmountScreen
from qrpos.tui.screens.owner.menu import OwnerMenuScreen
from qrpos.tui.services import KioskServices


async def test_L_switches_every_screen_live_and_is_remembered(tmp_path: Path) -> None:
    app = _app(tmp_path, "mn")
    async with app.run_test(size=(80, 24)) as pilot:
        await _unpaired_start_done(pilot)
        amount = AmountScreen()
        app.show_screen(amount)
        await pilot.pause()
        await pilot.press("1", "2", "5", "0", "0", "enter", "backspace")
        assert "Дүн оруулна" in str(amount.query_one("#title").render())
        assert "шийдэгдээгүй" in str(amount.query_one("#status").render())
        await pilot.press("L")
        await pilot.pause()
        await pilot.pause()
        assert current_language() == "en"
        assert str(amount.query_one("#title").render()) == "Enter the amount"
        assert "unsettled" in str(amount.query_one("#status").render())
        assert amount.amount == 1250  # what was keyed stays
        # the owner's menu switches with `l` too, and everything under it follows
        app.push_screen(OwnerMenuScreen(app.services, follower=app.receipts, first_poll_s=60))
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause()
        await pilot.pause()
        assert current_language() == "mn"
        assert str(app.screen.query_one("#title").render()) == "Эзэн"
        assert "Дүн оруулна" in str(amount.query_one("#title").render())
        await pilot.press("escape", "L")
        await pilot.pause()
    assert remembered_language(tmp_path) == "en"
    # a restart with "mn" configured starts in the language last chosen
    services = KioskServices(config=Config(state_dir=tmp_path, language="mn"), clock=fixed_clock)
    again = KioskApp(services, live_preview=False)
    async with again.run_test(size=(80, 24)) as pilot:
        await _unpaired_start_done(pilot)
        assert "Pair this terminal" in str(again.screen.query_one("#title").render())
    # but `--language mn` on the command line is obeyed, whatever was chosen last
    args = build_parser().parse_args(["demo", "--language", "mn", "--state-dir", str(tmp_path)])
    config = config_from_args(args)
    assert config.language_pinned
    pinned = KioskApp(KioskServices(config=config, clock=fixed_clock), live_preview=False)
    async with pinned.run_test(size=(80, 24)) as pilot:
        await _unpaired_start_done(pilot)
        assert current_language() == "mn"
    assert remembered_language(tmp_path) == "en"  # the choice on screen is kept for later
    assert not config_from_args(build_parser().parse_args(["demo"])).language_pinned


def test_an_unreadable_or_unknown_setting_falls_back_to_the_configuration(tmp_path: Path) -> None:
    assert remembered_language(tmp_path) is None
    (tmp_path / SETTINGS_FILE).write_text("{not json", encoding="utf-8")
    assert remembered_language(tmp_path) is None
    (tmp_path / SETTINGS_FILE).write_text('{"language": "fr"}', encoding="utf-8")
    assert remembered_language(tmp_path) is None
    remember_language(tmp_path, "en")
    assert remembered_language(tmp_path) == "en"
    assert [p.name for p in tmp_path.iterdir()] == [SETTINGS_FILE]  # no temp file left


async def test_ctrl_c_says_how_to_quit_in_the_screens_language(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    """Textual's own "Press ctrl+q to quit" would be English on a Mongolian screen."""
    from kiosk_harness import FAST, make_services

    services, ledger = make_services(tmp_path, live_url, terminal)
    services.config = dataclasses.replace(services.config, language="mn")
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.action_help_quit()
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert "Ctrl+Q: кассын програмаас гарах" in said
    ledger.close()


async def test_the_demos_fault_notice_speaks_the_screens_language(tmp_path: Path) -> None:
    from kiosk_harness import demo_kiosk

    async with demo_kiosk(tmp_path, language="mn") as (kiosk, _world):
        await kiosk.on_screen("AmountScreen")
        kiosk.app.action_demo_fault("drop_after_commit")
        await kiosk.pilot.pause()
        # in the demo's panel, never a toast over the cashier's screen
        said = kiosk.app.demo_extras.notices
        assert any("төлбөр авсны дараа хариу алга болно" in m for m in said), said
        assert not kiosk.app._notifications
