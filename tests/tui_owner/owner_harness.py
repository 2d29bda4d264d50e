"""Constants and the host app of the owner-screen tests (a uniquely named module, so
it never clashes with another directory's conftest)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from textual.app import App
from textual.widgets import DataTable

import qrpos.tui
from qrpos.tui.language import switch_language
from qrpos.tui.screens.owner.menu import OwnerMenuScreen
from qrpos.tui.services import KioskServices

PIN = "2468"
#: the kiosk's clock in these tests: 2024-05-02 11:00 local
NOW = datetime(2024, 5, 2, 3, 0, tzinfo=UTC)


class OwnerHost(App[None]):
    """A bare app that opens the owner menu, as the kiosk does on its owner key, with the
    kiosk's own stylesheet (so widths and paddings are the kiosk's)."""

    CSS_PATH = Path(qrpos.tui.__file__).with_name("app.tcss")

    def __init__(self, services: KioskServices, **menu: Any) -> None:
        super().__init__()
        self.services = services
        self.menu_options = menu

    def on_mount(self) -> None:
        self.push_screen(OwnerMenuScreen(self.services, **self.menu_options))

    def action_language(self) -> None:
        switch_language(self, self.services.config.state_dir)


def row_ids(table: DataTable[str]) -> list[str]:
    """The transaction ids of the history's rows, top to bottom (the table shows their
    tails; each row's key is the whole id)."""
    return [str(row.key.value) for row in table.ordered_rows]
