"""The shop owner's screens: history, reversal (PIN-protected), end of day.

`OwnerMenuScreen(services)` is the entry point the kiosk pushes. The screens are loaded
lazily so that `qrpos.tui.screens.owner.text` (shared with the CLI) loads without Textual.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OwnerMenuScreen"]


def __getattr__(name: str) -> Any:
    if name == "OwnerMenuScreen":
        from qrpos.tui.screens.owner.menu import OwnerMenuScreen

        return OwnerMenuScreen
    raise AttributeError(name)
