"""The owner's cashiers: add one, give one a new PIN or a new name, or remove one, behind
the manager PIN. Typed at full speed, every key lands in its field (`TypedAhead`).

The form: the cashier's name; what to do with it (a PIN of 4 to 12 digits adds the
cashier, or gives an existing one that new PIN; a new name renames; both empty removes);
then the manager PIN. PINs are kept as salted hashes and never shown.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input, Static

from qrpos.present.i18n import t
from qrpos.present.owner import pin_refusal
from qrpos.present.words import error_words
from qrpos.said import say
from qrpos.tui.screens.base import FORM_KEYS, LanguageChanged, TypedAhead
from qrpos.tui.screens.owner.context import OwnerContext


class CashiersScreen(TypedAhead, Screen[None]):
    """The list of cashiers, and the form that changes it."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        *FORM_KEYS,
        Binding("escape", "back", "back", show=False),
    ]
    SUBMIT_FIELDS = frozenset({"pin"})

    def __init__(self, ctx: OwnerContext) -> None:
        super().__init__(classes="owner")
        self.ctx = ctx
        self.busy = False
        self.names: list[str] = []
        #: the last answer shown (for tests and for the owner's eyes)
        self.outcome: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(t("cashiers.title"), id="title", markup=False)
        with Vertical(id="body"):
            yield Static(self.list_text(), id="cashier-list", markup=False)
            with Horizontal(id="cashier-form"):
                yield Input(placeholder=t("cashiers.name"), id="name", max_length=24)
                yield Input(
                    placeholder=t("cashiers.new_pin"),
                    password=True,
                    id="new-pin",
                    max_length=12,
                    restrict=r"[0-9]*",
                )
                yield Input(placeholder=t("cashiers.new_name"), id="new-name", max_length=24)
            yield Input(
                placeholder=t("reverse.pin_prompt"),
                password=True,
                id="pin",
                max_length=12,
                restrict=r"[0-9]*",
            )
            yield Static(self.outcome or "", id="answer", classes="prose", markup=False)
        yield Static(t("cashiers.hint"), id="hint", markup=False)

    @property
    def _ledger(self) -> Any:
        desk = self.ctx.services.desk
        return desk.ledger if desk is not None else None

    def list_text(self) -> str:
        if not self.names:
            return t("cashiers.none")
        return "\n".join(f"{n:>2}  {name}" for n, name in enumerate(self.names, start=1))

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus()
        self.load()

    @work(exclusive=True, group="owner-cashiers-list", exit_on_error=False)
    async def load(self) -> None:
        from qrpos.ledger.shifts import cashiers

        if self._ledger is None:
            self.say(t("reverse.not_paired"))
            return
        found = await asyncio.to_thread(cashiers, self._ledger)
        self.names = [c.name for c in found]
        self.query_one("#cashier-list", Static).update(self.list_text())

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        fields = ("name", "new-name")
        typed = {name: self.query_one(f"#{name}", Input).value for name in fields}
        await self.recompose()
        for name, value in typed.items():
            self.query_one(f"#{name}", Input).value = value

    def say(self, text: str, *, good: bool = False) -> None:
        self.outcome = text
        answer = self.query_one("#answer", Static)
        answer.update(text)
        answer.set_class(not good, "error")
        answer.set_class(good, "good")

    def submitted(self, field: Input) -> None:
        """Enter in the manager PIN: do what the form says, behind it."""
        if self.busy:
            return
        name = self.query_one("#name", Input).value.strip()
        if not name:
            self.say(t("cashiers.no_name"))
            self.query_one("#name", Input).focus()
            return
        pin_input = self.query_one("#pin", Input)
        pin, pin_input.value = pin_input.value, ""
        if not pin:
            self.say(t("reverse.pin_empty"))
            return
        new_pin_input = self.query_one("#new-pin", Input)
        new_pin, new_pin_input.value = new_pin_input.value, ""
        new_name = self.query_one("#new-name", Input).value.strip()
        self.busy = True
        self.change(name, new_pin, new_name, pin)

    @work(exclusive=True, group="owner-cashiers", exit_on_error=False)
    async def change(self, name: str, new_pin: str, new_name: str, pin: str) -> None:
        """Check the manager PIN (slow hash, off the event loop), then change the list."""
        from qrpos.ledger.shifts import ShiftError
        from qrpos.manager_pin import PinError

        try:
            refusal = pin_refusal(await asyncio.to_thread(self.ctx.pin_gate.check, pin))
            if refusal is not None:
                self.say(refusal)
                self.ctx.count_down(self, self.say)
                return
            try:
                said = await asyncio.to_thread(self._apply, name, new_pin, new_name)
            except (ShiftError, PinError) as exc:
                self.say(error_words(exc))
                return
            self.say(said, good=True)
            for field in ("name", "new-pin", "new-name"):
                self.query_one(f"#{field}", Input).value = ""
            self.query_one("#name", Input).focus()
            self.load()
        finally:
            self.busy = False

    def _apply(self, name: str, new_pin: str, new_name: str) -> str:
        """Add, re-PIN, rename or remove (in a thread: the PIN's hash is slow)."""
        from qrpos.ledger.shifts import (
            ShiftError,
            add_cashier,
            cashiers,
            remove_cashier,
            rename_cashier,
            set_cashier_pin,
        )
        from qrpos.manager_pin import pin_record

        ledger = self._ledger
        known = {c.name.casefold(): c for c in cashiers(ledger)}
        cashier = known.get(name.casefold())
        if cashier is None:
            if not new_pin:  # nothing to remove or rename: a new cashier needs a PIN
                raise ShiftError(say("shift.no_cashier", "no cashier called {name}", name=name))
            at = self.ctx.services.clock()
            added = add_cashier(ledger, name, pin_record(new_pin, cashier=True), at=at)
            return t("cli.shift.added", name=added.name)
        if new_name:
            renamed = rename_cashier(ledger, cashier, new_name)
            if new_pin:
                set_cashier_pin(ledger, renamed, pin_record(new_pin, cashier=True))
            return t("cli.shift.renamed", name=cashier.name, new=renamed.name)
        if new_pin:
            set_cashier_pin(ledger, cashier, pin_record(new_pin, cashier=True))
            return t("cli.shift.pin_set", name=cashier.name)
        remove_cashier(ledger, cashier)
        return t("cli.shift.removed", name=cashier.name)

    def action_back(self) -> None:
        self.dismiss(None)
