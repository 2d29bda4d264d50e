"""What every kiosk screen shares: a title line, a key-hint line and the status bar.

Screens render and post messages (`qrpos.tui.messages`); they never call into the app.
When the language changes, the app posts `LanguageChanged` to every screen and each one
draws its words again (`retranslate`), keeping what the cashier has keyed.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from qrpos.tui.widgets.status_bar import StatusBar


@dataclass
class LanguageChanged(Message):
    """The kiosk's language is now `language`: every screen redraws its words."""

    language: str


class KioskScreen(Screen[None]):
    """A full screen with `#title` at the top, `#hint` and the status bar at the bottom."""

    def compose_frame(self, title: str) -> ComposeResult:
        """Yield the title; call `compose_footer` after the body."""
        yield Static(title, id="title", markup=False)

    def compose_footer(self, hint: str) -> ComposeResult:
        """The key hints and the status bar."""
        yield Static(hint, id="hint", markup=False)
        yield StatusBar(id="status")

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        await self.retranslate()

    async def retranslate(self) -> None:
        """Draw the screen's words in the current language (default: compose again)."""
        await self.recompose()
        self.after_recompose()

    def after_recompose(self) -> None:
        """Put back what `compose` does not draw (notices, progress) after a language switch."""


class KioskDialog(ModalScreen[bool]):
    """A modal question answered with Enter (True) or Esc (False)."""

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        await self.recompose()
