"""What every kiosk screen shares: a title line, a key-hint line and the status bar."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from qrpos.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from qrpos.tui.app import KioskApp


class KioskScreen(Screen[None]):
    """A full screen with `#title` at the top, `#hint` and the status bar at the bottom."""

    def kiosk(self) -> KioskApp:
        """The app, typed."""
        return cast("KioskApp", self.app)

    def compose_frame(self, title: str, hint: str) -> ComposeResult:
        """Yield the title; call `compose_footer` after the body."""
        yield Static(title, id="title", markup=False)

    def compose_footer(self, hint: str) -> ComposeResult:
        """The key hints and the status bar."""
        yield Static(hint, id="hint", markup=False)
        yield StatusBar(id="status")


class KioskDialog(ModalScreen[bool]):
    """A modal question answered with Enter (True) or Esc (False)."""

    def kiosk(self) -> KioskApp:
        """The app, typed."""
        return cast("KioskApp", self.app)
