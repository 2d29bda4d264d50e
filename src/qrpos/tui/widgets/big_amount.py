"""The amount in large block digits with thousands separators and ₮."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from qrpos.present.format import TUGRIK, big_text, group_thousands


class BigAmount(Widget):
    """Five rows of block digits; an empty amount shows ``0 ₮`` dimmed."""

    amount: reactive[int | None] = reactive(None)

    def __init__(self, amount: int | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(BigAmount.amount, amount)

    def render(self) -> Text:
        value = self.amount
        text = f"{group_thousands(value or 0)} {TUGRIK}"
        # one column narrower per pixel when the widest amount would not fit
        scale = 2 if len(big_text(text)[0]) <= max(self.size.width, 1) else 1
        rows = big_text(text, scale=scale)
        return Text("\n".join(rows), style="dim" if value is None else "")
