"""Quick prices: the owner sets up to nine amounts (a canteen's set menus), each charged
on the amount screen by one key (F3..F11), behind the manager PIN."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input, Static

from qrpos.present.format import TUGRIK, group_thousands
from qrpos.present.i18n import t
from qrpos.present.owner import pin_refusal
from qrpos.present.words import words
from qrpos.quick_prices import SLOTS, QuickPriceError, key_of
from qrpos.said import os_reason
from qrpos.tui.screens.base import FORM_KEYS, LanguageChanged, TypedAhead
from qrpos.tui.screens.owner.context import OwnerContext


class PricesScreen(TypedAhead, Screen[None]):
    """The nine slots, and a form: slot, amount (empty clears it), label, manager PIN;
    typed at full speed, every key lands in its field (`TypedAhead`)."""

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
        #: the last answer shown (for tests and for the owner's eyes)
        self.outcome: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(t("prices.title"), id="title", markup=False)
        with Vertical(id="body"):
            yield Static(self.slots_text(), id="slots", markup=False)
            with Horizontal(id="price-form"):
                yield Input(
                    placeholder=t("prices.slot"), id="slot", max_length=1, restrict=r"[1-9]?"
                )
                yield Input(
                    placeholder=t("prices.amount"), id="price", max_length=7, restrict=r"[0-9]*"
                )
                yield Input(placeholder=t("prices.label"), id="label", max_length=16)
            yield Input(
                placeholder=t("reverse.pin_prompt"),
                password=True,
                id="pin",
                max_length=12,
                restrict=r"[0-9]*",
            )
            yield Static(self.outcome or "", id="answer", classes="prose", markup=False)
        yield Static(t("prices.hint"), id="hint", markup=False)

    def slots_text(self) -> str:
        prices = self.ctx.services.quick_prices.prices()
        lines = []
        for slot in range(1, SLOTS + 1):
            price = prices.get(slot)
            what = (
                f"{group_thousands(price.amount):>9} {TUGRIK}  {price.label}".rstrip()
                if price is not None
                else t("prices.empty")
            )
            lines.append(f"{key_of(slot):>3}  {slot}  {what}")
        return "\n".join(lines)

    def on_mount(self) -> None:
        self.query_one("#slot", Input).focus()
        problem = self.ctx.services.quick_prices.problem
        if problem:
            self.say(t("prices.unreadable"))

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        fields = ("slot", "price", "label")
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

    def field_done(self, field: Input) -> None:
        """The slot typed: its price and label come up to be changed (unless the owner
        already typed new ones)."""
        if field.id != "slot" or not field.value:
            return
        price = self.ctx.services.quick_prices.prices().get(int(field.value))
        amount, label = self.query_one("#price", Input), self.query_one("#label", Input)
        if price is not None and not amount.value and not label.value:
            amount.value, label.value = str(price.amount), price.label

    def submitted(self, field: Input) -> None:
        """Enter in the PIN: store (or clear) the slot behind the PIN."""
        if self.busy:
            return
        slot = self.query_one("#slot", Input).value
        if not slot:
            self.say(t("prices.no_slot"))
            self.query_one("#slot", Input).focus()
            return
        pin_input = self.query_one("#pin", Input)
        pin, pin_input.value = pin_input.value, ""
        if not pin:
            self.say(t("reverse.pin_empty"))
            return
        amount = self.query_one("#price", Input).value
        label = self.query_one("#label", Input).value
        self.busy = True
        self.save(int(slot), int(amount) if amount else None, label, pin)

    @work(exclusive=True, group="owner-prices", exit_on_error=False)
    async def save(self, slot: int, amount: int | None, label: str, pin: str) -> None:
        """Check the PIN (slow hash, off the event loop), then store or clear the slot."""
        try:
            refusal = pin_refusal(await asyncio.to_thread(self.ctx.pin_gate.check, pin))
            if refusal is not None:
                self.say(refusal)
                self.ctx.count_down(self, self.say)
                return
            book = self.ctx.services.quick_prices
            key = key_of(slot)
            try:
                if amount is None:
                    book.clear(slot)
                    self.say(t("prices.cleared", fkey=key), good=True)
                else:
                    price = book.set(slot, amount, label)
                    shown = f"{group_thousands(price.amount)} {TUGRIK}"
                    self.say(t("prices.saved", fkey=key, amount=shown), good=True)
            except QuickPriceError:
                self.say(t("prices.out_of_range"))
                return
            except OSError as exc:
                self.say(t("prices.not_saved", reason=words(os_reason(exc))))
                return
            self.query_one("#slots", Static).update(self.slots_text())
            for name in ("slot", "price", "label"):
                self.query_one(f"#{name}", Input).value = ""
            self.query_one("#slot", Input).focus()
        finally:
            self.busy = False

    def action_back(self) -> None:
        self.dismiss(None)
