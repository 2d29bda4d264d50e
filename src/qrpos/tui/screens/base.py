"""What every kiosk screen shares: a title line, a key-hint line and the status bar.

Screens render and post messages (`qrpos.tui.messages`); they never call into the app.
When the language changes, the app posts `LanguageChanged` to every screen and each one
draws its words again (`retranslate`), keeping what the cashier has keyed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

from qrpos.tui.widgets.demo_panel import DemoPanel
from qrpos.tui.widgets.status_bar import StatusBar

#: Tab, Shift+Tab and Enter of a form that takes keys typed ahead (`TypedAhead`): a form
#: screen puts these in its BINDINGS (Textual merges bindings of widget classes only)
FORM_KEYS: list[BindingType] = [
    Binding("tab", "move_field(1)", "next field", show=False, priority=True),
    Binding("shift+tab", "move_field(-1)", "previous field", show=False, priority=True),
    Binding("enter", "enter_field", "enter", show=False, priority=True),
]


class TypedAhead:
    """A form whose keys land where they were meant when typed faster than it draws.

    Textual hands a key to the focused field's own queue; a plain Tab or Enter is acted
    on only when that field reaches it, after every character typed behind it has been
    handed to the same field (a fast typist's password ends up in the username). With
    `FORM_KEYS` (priority bindings) Tab, Shift+Tab and Enter move the focus as the app
    takes them from its queue, so the keys after them go to the field they move to.

    Enter in a field of `SUBMIT_FIELDS` submits: `submitted` runs once every field has
    taken the characters typed before the Enter. Enter in another field moves on, and
    `field_done` runs for it once its characters are in.
    """

    #: the ids of the fields where Enter submits the form
    SUBMIT_FIELDS: ClassVar[frozenset[str]] = frozenset()

    def action_move_field(self, step: int) -> None:
        screen: Any = self
        if step > 0:
            screen.focus_next()
        else:
            screen.focus_previous()

    def action_enter_field(self) -> None:
        screen: Any = self
        field = screen.focused
        if not isinstance(field, Input):
            self.entered_elsewhere()
        elif field.id in self.SUBMIT_FIELDS:
            self.after_typed(lambda: self.submitted(field))
        else:
            screen.focus_next()
            field.call_later(self.field_done, field)

    def after_typed(self, then: Callable[[], object]) -> None:
        """Run `then` once every field of the form has handled the keys queued to it."""
        screen: Any = self
        fields = list(screen.query(Input))

        def step(i: int) -> None:
            if i == len(fields):
                then()
            else:
                fields[i].call_later(step, i + 1)

        step(0)

    def field_done(self, field: Input) -> None:
        """Enter moved on from `field`, whose characters are now all in (default: nothing)."""

    def submitted(self, field: Input) -> None:
        """Enter in a submitting field, with every typed character in place."""

    def entered_elsewhere(self) -> None:
        """Enter with no field focused (default: nothing)."""


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
        yield StatusBar(id="status")
        yield DemoPanel()
        yield Static(hint, id="hint", markup=False)

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
