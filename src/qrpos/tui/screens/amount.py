"""Step 1 of a sale: the cashier keys the amount on the numeric keypad, or charges one
of the owner's quick prices (F3..F11) or the last amount again (F12) with one key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from qrpos import manager_pin, spec
from qrpos.present.format import TUGRIK, group_thousands
from qrpos.present.i18n import t
from qrpos.quick_prices import QuickPrice, key_of
from qrpos.tui.keypad import KeypadAction, keypad_action
from qrpos.tui.screens.base import KioskScreen
from qrpos.tui.widgets.big_amount import BigAmount

#: more digits than the largest amount has; further digits are ignored, not wrapped
MAX_DIGITS = len(str(spec.AMOUNT_MAX_MNT)) + 1


class AmountScreen(KioskScreen):
    """Digits build the amount; Enter asks the app to start the sale (`AmountEntered`)."""

    @dataclass
    class AmountEntered(Message):
        """The cashier confirmed an amount that is in range."""

        amount: int

    @dataclass
    class PricesWanted(Message):
        """The screen is back on top: the app hands it the quick prices as they are now
        (`show_prices`), which the owner may have changed meanwhile."""

        screen: AmountScreen

    def __init__(
        self,
        notice: str = "",
        *,
        error: bool = False,
        demo_keys: bool = False,
        carried: list[tuple[KeypadAction, str]] | None = None,
        prices: Mapping[int, QuickPrice] | None = None,
        last_amount: int | None = None,
        **fields: str,
    ) -> None:
        super().__init__()
        self._digits = ""
        #: the owner's quick prices by slot, and the last amount (F12)
        self.prices = dict(prices or {})
        self.last_amount = last_amount
        #: keys typed on the result screen before this one was up, replayed in order
        self._carried = carried
        #: the notice line as a catalogue key and its fields (redrawn in a new language)
        self._notice: tuple[str, dict[str, str], bool] = (notice, fields, error)
        self.demo_keys = demo_keys
        #: Enter was pressed before the kiosk could take sales: start once it can
        self.waiting_to_start = False

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(t("amount.title"))
        with Vertical(id="body"):
            yield BigAmount(self.amount, id="amount")
            yield Static("", id="notice", classes="prose", markup=False)
            yield Static(self._price_list(), id="prices", classes="prose", markup=False)
        yield from self.compose_footer(self._hint())

    def show_prices(self, prices: Mapping[int, QuickPrice], last_amount: int | None) -> None:
        """The quick prices became known (the screen was drawn before the services)."""
        self.prices, self.last_amount = dict(prices), last_amount
        # the list may be away for a moment (a recompose in a new language, the app
        # closing): compose draws it from the values just kept
        for shown in self.query("#prices").results(Static):
            shown.update(self._price_list())

    def _price_list(self) -> str:
        """The quick prices and the repeat key, as the cashier reads them."""
        entries = [
            " ".join(filter(None, (p.key, p.label, f"{group_thousands(p.amount)} {TUGRIK}")))
            for p in sorted(self.prices.values(), key=lambda p: p.slot)
        ]
        if self.last_amount is not None:
            entries.append(t("amount.repeat_entry", amount=group_thousands(self.last_amount)))
        # a line breaks between two prices, never inside one (no-break spaces within)
        return "   ".join(entry.replace(" ", "\u00a0") for entry in entries)

    def _hint(self) -> str:
        if not self.demo_keys:
            return t("amount.hint")
        # the panel's key on the keypad's line: the demo's own line is full at 80 columns
        keys = f"{t('amount.hint')} · {t('display.panel_hint')}"
        return f"{keys}\n{t('demo.keys', pin=manager_pin.DEMO_PIN)}"

    def on_mount(self) -> None:
        self.after_recompose()
        # keys that reach this screen from now on queue behind this mount: replay first
        carried, self._carried = self._carried, None
        for action in carried or ():
            self._apply(action)

    def on_screen_resume(self) -> None:
        self.post_message(self.PricesWanted(self))

    def after_recompose(self) -> None:
        key, fields, error = self._notice
        self.show_notice(key, error=error, **fields)

    def wait_to_start(self) -> None:
        """Enter before the kiosk is ready: say so; `start_if_waiting` goes on later."""
        self.waiting_to_start = True
        self.show_notice("amount.starting")

    def start_if_waiting(self) -> None:
        """The kiosk is ready: clear the notice and confirm the amount kept waiting."""
        waiting, self.waiting_to_start = self.waiting_to_start, False
        self.show_notice("")
        if waiting and self.amount is not None:
            self._confirm()

    def show_demo_keys(self) -> None:
        """The demo is running: list its keys under the keypad's."""
        self.demo_keys = True
        self.query_one("#hint", Static).update(self._hint())

    @property
    def amount(self) -> int | None:
        """The amount keyed so far, or None when nothing is keyed."""
        return int(self._digits) if self._digits else None

    def show_notice(self, key: str, *, error: bool = False, **fields: str) -> None:
        """A line under the amount (a catalogue key; "" clears it): a hint, a refusal or
        a message from the last sale."""
        self._notice = (key, fields, error)
        notice = self.query_one("#notice", Static)
        notice.update(t(key, **fields) if key else "")
        notice.set_class(error, "error")

    def _set_digits(self, digits: str) -> None:
        self.waiting_to_start = False
        self._digits = digits.lstrip("0")[:MAX_DIGITS]
        self.query_one("#amount", BigAmount).amount = self.amount
        self.show_notice("")

    def on_key(self, event: events.Key) -> None:
        action = keypad_action(event)
        if action is None:
            return
        event.stop()
        event.prevent_default()
        self._apply(action)

    def _apply(self, action: tuple[KeypadAction, str]) -> None:
        kind, digits = action
        if kind is KeypadAction.DIGITS:
            self._set_digits(self._digits + digits)
        elif kind is KeypadAction.DELETE:
            self._set_digits(self._digits[:-1])
        elif kind is KeypadAction.CLEAR or kind is KeypadAction.CANCEL:
            self._set_digits("")
        elif kind is KeypadAction.CONFIRM:
            self._confirm()
        elif kind is KeypadAction.QUICK:
            price = self.prices.get(int(digits))
            key = key_of(int(digits))
            if price is None:
                self.show_notice("amount.no_quick_price", error=True, fkey=key)
            else:
                self._charge_whole(price.amount, key)
        elif kind is KeypadAction.REPEAT:
            if self.last_amount is None:
                self.show_notice("amount.no_last_amount", error=True)
            else:
                self._charge_whole(self.last_amount, "F12")

    def _charge_whole(self, amount: int, key: str) -> None:
        """One key that is a whole amount: confirmed at once, unless digits were keyed
        (they would be lost unseen): then the cashier is asked to clear them first."""
        if self._digits:
            self.show_notice("amount.clear_first", error=True, fkey=key)
            return
        self._set_digits(str(amount))
        self._confirm()

    def _confirm(self) -> None:
        amount = self.amount
        if amount is None:
            self.show_notice("amount.empty", error=True)
        elif amount < spec.AMOUNT_MIN_MNT:
            self.show_notice(
                "amount.too_small", error=True, min=group_thousands(spec.AMOUNT_MIN_MNT)
            )
        elif amount > spec.AMOUNT_MAX_MNT:
            self.show_notice(
                "amount.too_large", error=True, max=group_thousands(spec.AMOUNT_MAX_MNT)
            )
        else:
            self.post_message(self.AmountEntered(amount))
