"""The language switch (`L` anywhere, `l` in the owner's menu): every screen on the stack
redraws its words at once, and the choice is remembered in the state dir for restarts."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from textual.app import App

from qrpos.present.i18n import current_language, languages, set_language
from qrpos.present.language import remember_language
from qrpos.tui.screens.base import LanguageChanged

log = logging.getLogger("qrpos.tui")


def switch_language(app: App[Any], state_dir: Path) -> str:
    """Move to the next language, tell every screen, remember it; returns the language."""
    options = languages()
    language = options[(options.index(current_language()) + 1) % len(options)]
    set_language(language)
    try:
        remember_language(state_dir, language)
    except OSError as exc:
        # the switch still holds until the kiosk restarts
        log.warning("language not remembered: %s", exc)
    for screen in app.screen_stack:
        screen.post_message(LanguageChanged(language))
    return language
