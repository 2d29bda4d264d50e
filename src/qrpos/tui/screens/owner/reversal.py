"""Reversal: a completed charge (selected, or a typed tx_ id) refunded in full through
the ledger's durable queue, behind the manager PIN."""

from __future__ import annotations

import logging
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from qrpos import spec
from qrpos.present.format import format_mnt
from qrpos.present.i18n import t
from qrpos.present.owner import result_text
from qrpos.service import Transaction
from qrpos.tui.screens.base import FORM_KEYS, LanguageChanged, TypedAhead
from qrpos.tui.screens.owner.context import OwnerContext
from qrpos.tui.screens.owner.messages import ReversalDone

log = logging.getLogger("qrpos.tui.owner")


class ReversalScreen(TypedAhead, ModalScreen[None]):
    """Asks for the transaction (prefilled when selected) and the manager PIN; typed at
    full speed, the PIN never lands in the transaction's field (`TypedAhead`)."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        *FORM_KEYS,
        Binding("escape", "close", "cancel", show=False),
    ]
    SUBMIT_FIELDS = frozenset({"pin"})

    def __init__(self, ctx: OwnerContext, *, tx: Transaction | None = None) -> None:
        super().__init__(classes="owner")
        self.ctx = ctx
        self.tx = tx
        self.busy = False
        #: the refund went through: the dialog only says so until it is closed
        self.done = False
        #: the last answer shown (for tests and for the owner's eyes)
        self.outcome: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="reverse-dialog"):
            yield Static(t("reverse.title"), id="title", markup=False)
            yield Static(self.question(), id="question", classes="prose", markup=False)
            yield Input(
                value=self.tx.id if self.tx else "",
                placeholder=t("reverse.tx_prompt"),
                id="tx",
                max_length=80,
            )
            yield Input(
                placeholder=t("reverse.pin_prompt"),
                password=True,
                id="pin",
                max_length=12,
                restrict=r"[0-9]*",
            )
            yield Static("", id="answer", classes="prose", markup=False)
            yield Static(t("reverse.hint"), id="hint", markup=False)

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        typed = self.query_one("#tx", Input).value
        answer = self.outcome
        await self.recompose()
        self.query_one("#tx", Input).value = typed
        if answer is not None:
            self.query_one("#answer", Static).update(answer)
        if self.done:
            self.finish()

    def question(self) -> str:
        if self.tx is None:
            return t("reverse.tx_prompt")
        return t("reverse.confirm", amount=format_mnt(self.tx.amount_mnt), tx=self.tx.id)

    def on_mount(self) -> None:
        self.query_one("#pin" if self.tx else "#tx", Input).focus()

    def say(self, text: str, *, good: bool = False) -> None:
        self.outcome = text
        answer = self.query_one("#answer", Static)
        answer.update(text)
        answer.set_class(not good, "error")
        answer.set_class(good, "good")

    def submitted(self, field: Input) -> None:
        """Enter in the PIN: check the id, then the PIN, then refund."""
        if self.busy or self.done:
            return
        tx_id = self.query_one("#tx", Input).value.strip()
        if not spec.TX_ID_RE.match(tx_id):
            self.say(t("reverse.invalid_tx"))
            self.query_one("#tx", Input).focus()
            return
        pin_input = self.query_one("#pin", Input)
        pin, pin_input.value = pin_input.value, ""
        if not pin:
            self.say(t("reverse.pin_empty"))
            return
        self.busy = True
        self.reverse(tx_id, pin)

    @work(exclusive=True, group="owner-reverse", exit_on_error=False)
    async def reverse(self, tx_id: str, pin: str) -> None:
        """Check the PIN (slow hash, off the event loop), then queue and send."""
        try:
            desk, refusal = await self.ctx.desk_behind_pin(pin)
            if desk is None:
                self.say(refusal or "")
                self.ctx.count_down(self, self.say)
                return
            self.say(t("reverse.working", tx=tx_id), good=True)
            result = await desk.reverse(tx_id)
            text, good = result_text(result)
            self.say(text, good=good)
            if result.state == "refunded":
                self.ctx.follower.reversed(tx_id)
                self.print_refund(tx_id)
                self.post_message(ReversalDone(tx_id))
                self.finish()
        finally:
            self.busy = False

    def print_refund(self, tx_id: str) -> None:
        """The refund's slip, when a printer is set and the sale is known (selected in the
        history, or in its cache)."""
        printing = self.ctx.services.printing
        if printing is None:
            return
        charge = self.tx if self.tx is not None and self.tx.id == tx_id else None
        if charge is None and self.ctx.cache is not None:
            charge = self.ctx.cache.get(tx_id)
        if charge is None:
            log.info("refund of %s: the sale is not known here, no slip printed", tx_id)
            return
        sale = charge
        self.run_worker(lambda: printing.print_refund(sale), thread=True, exit_on_error=False)

    def finish(self) -> None:
        """Refunded: the fields are shut and Enter or Esc closes the dialog."""
        self.done = True
        for field in self.query(Input):
            field.disabled = True
        self.query_one("#hint", Static).update(t("reverse.done_hint"))
        self.set_focus(None)

    def entered_elsewhere(self) -> None:
        """Refunded, the fields shut: Enter closes (it never asks for a PIN again)."""
        if self.done:
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
