"""The manager PIN in front of an owner screen the shop chose to guard (the takings, the
history: `[owner] pin_screens`). Refunds and reviews ask for it at the decision."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from qrpos.present.i18n import t
from qrpos.present.owner import pin_refusal
from qrpos.reports.pin_gate import PinGate
from qrpos.tui.screens.base import FORM_KEYS, TypedAhead
from qrpos.tui.screens.owner.context import OwnerContext


class PinDialog(TypedAhead, ModalScreen[bool]):
    """Asks for the manager PIN; dismissed with True once it is right, False on Esc.
    Wrong PINs count toward the same pause as the refund screen's."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        *FORM_KEYS,
        Binding("escape", "cancel", "cancel", show=False),
    ]
    SUBMIT_FIELDS = frozenset({"pin"})

    def __init__(
        self,
        ctx: OwnerContext,
        screen_title: str,
        *,
        gate: PinGate | None = None,
        asked: str | None = None,
        prompt: str | None = None,
    ) -> None:
        """The manager PIN; with `gate`, another PIN behind the same pause (a cashier's),
        `asked` saying whose and `prompt` naming it in the field."""
        super().__init__(classes="owner")
        self.ctx = ctx
        self.screen_title = screen_title
        self.gate = gate or ctx.pin_gate
        self.asked = asked or t("owner.pin_asked")
        self.prompt = prompt or t("reverse.pin_prompt")
        self.busy = False
        #: the last answer shown (for tests and for the owner's eyes)
        self.outcome: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="pin-dialog"):
            yield Static(self.screen_title, id="title", markup=False)
            yield Static(self.asked, classes="prose", markup=False)
            yield Input(
                placeholder=self.prompt,
                password=True,
                id="pin",
                max_length=12,
                restrict=r"[0-9]*",
            )
            yield Static("", id="answer", classes="prose error", markup=False)
            yield Static(t("reverse.hint"), id="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#pin", Input).focus()
        self.ctx.count_down(self, self.say, self.gate)

    def say(self, text: str) -> None:
        self.outcome = text
        self.query_one("#answer", Static).update(text)

    def submitted(self, field: Input) -> None:
        if self.busy:
            return
        pin, field.value = field.value, ""
        if not pin:
            self.say(t("reverse.pin_empty"))
            return
        self.busy = True
        self.check(pin)

    @work(exclusive=True, group="owner-pin", exit_on_error=False)
    async def check(self, pin: str) -> None:
        """The slow hash runs off the event loop."""
        try:
            refusal = pin_refusal(await asyncio.to_thread(self.gate.check, pin))
            if refusal is None:
                self.dismiss(True)
                return
            self.say(refusal)
            self.ctx.count_down(self, self.say, self.gate)
        finally:
            self.busy = False

    def action_cancel(self) -> None:
        self.dismiss(False)
