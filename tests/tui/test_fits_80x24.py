"""Every kiosk screen, in Mongolian and in English, fits 80×24: no line wraps or is cut
(paragraphs classed `prose` may wrap but must stay on screen)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_snapshots import SCREENS, _app, _unpaired_start_done

from qrpos.tui.app import KioskApp
from qrpos.tui.screens.abandon import AbandonDialog
from qrpos.tui.screens.amount import AmountScreen
from screen_fit import overflows


@pytest.mark.parametrize("language", ["mn", "en"])
async def test_every_kiosk_screen_fits_80x24(language: str, tmp_path: Path) -> None:
    app = _app(tmp_path, language)
    async with app.run_test(size=(80, 24)) as pilot:
        await _unpaired_start_done(pilot)
        problems: dict[str, list[str]] = {}
        screens: dict[str, Callable[[KioskApp], Any]] = {
            **SCREENS,
            "amount_demo": lambda app: AmountScreen(demo_keys=True),
        }
        for name, make in sorted(screens.items()):
            app.show_screen(make(app))
            await pilot.pause()
            await pilot.pause()
            problems[name] = overflows(app.screen)
        app.push_screen(AbandonDialog())
        await pilot.pause()
        problems["abandon"] = overflows(app.screen)
    assert {k: v for k, v in problems.items() if v} == {}


async def test_the_fit_check_sees_a_line_that_wraps(tmp_path: Path) -> None:
    from textual.widgets import Static

    app = _app(tmp_path, "en")
    async with app.run_test(size=(80, 24)) as pilot:
        await _unpaired_start_done(pilot)
        app.screen.query_one("#hint", Static).update("x" * 90)
        await pilot.pause()
        assert any("wraps" in p for p in overflows(app.screen))


@pytest.mark.parametrize("language", ["mn", "en"])
def test_a_busy_status_bar_says_everything_in_80_columns(language: str) -> None:
    from datetime import UTC, datetime

    from qrpos.present.i18n import current_language, set_language
    from qrpos.tui.widgets.status_bar import KioskStatus, status_line

    before = current_language()
    set_language(language)
    try:
        now = datetime(2025, 3, 14, 4, 5, 6, tzinfo=UTC)
        status = KioskStatus(
            username="term_demo0001", online=True, unresolved=3, camera_state="running", fps=15.0
        )
        line = status_line(replace(status, now=now), 80).plain
        offline = status_line(
            replace(status, now=now, online=False, online_since=now, camera_state="no_frames"), 80
        ).plain
        starting = status_line(replace(status, now=now, starting="recovery"), 80).plain
        display = status_line(replace(status, now=now, display=True), 80).plain
        both = status_line(replace(status, now=now, display=True, printer=True), 80).plain
    finally:
        set_language(before)
    for shown in (line, offline, starting, display, both):
        # nothing cut: the unsettled count, the camera and the clock all made it
        assert len(shown) <= 80 and shown.rstrip().endswith("12:05:06"), shown
        assert "3 │ ca" in shown or "3 │ ка" in shown, shown
        assert "fps" in shown or "no frames" in shown or "дүрсгүй" in shown, shown
    assert ("камер 15 fps" if language == "mn" else "cam 15 fps") in line
    assert ("камер дүрсгүй" if language == "mn" else "cam no frames") in offline
