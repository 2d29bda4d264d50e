"""The cashier's confirmation before abandoning an unclear sale."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from qrpos.present.i18n import t
from qrpos.tui.keypad import KeypadAction, keypad_action
from qrpos.tui.screens.base import KioskDialog


class AbandonDialog(KioskDialog):
    """Enter abandons (the kiosk refunds automatically if it was charged); Esc keeps going."""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(t("abandon.title"), id="dialog-title", markup=False)
            yield Static(t("abandon.body"), id="dialog-body", classes="prose", markup=False)
            yield Static(f"{t('abandon.confirm')}   {t('abandon.keep')}", markup=False)

    def on_key(self, event: events.Key) -> None:
        action = keypad_action(event)
        if action is None:
            return
        event.stop()
        if action[0] is KeypadAction.CONFIRM:
            self.dismiss(True)
        elif action[0] in (KeypadAction.CANCEL, KeypadAction.CLEAR):
            self.dismiss(False)
