"""Payments to check: sales the kiosk could not prove either way, settled by the owner
behind the manager PIN.

The upper table lists the open reviews (sale, amount, time, why); the lower one the
history rows that could be the selected sale's charge, with any other sale that could
own the same row. The owner marks a row as this sale (C), refunds it (R), or marks the
sale not charged (N), then confirms with the PIN. A row the kiosk did not offer (after a
re-pairing it cannot read the old terminal's history) is typed from the merchant
dashboard (T, then C or R): the desk checks what it can, and says what it could not.
The decision goes through `ChargeDesk.settle_review`, which checks it against the rows
and keeps an audit trail.
Once the other device is re-paired, F (with the PIN) clears the warning about it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from qrpos.ledger import (
    IntentState,
    MarkCharged,
    MarkNotCharged,
    RefundRow,
    ReviewCandidate,
    ReviewDecision,
    ReviewRefused,
    ReviewView,
)
from qrpos.present.format import format_mnt, local_datetime
from qrpos.present.i18n import t
from qrpos.present.owner import review_reason
from qrpos.present.words import error_words
from qrpos.redact import escape_text
from qrpos.tui.screens.base import LanguageChanged
from qrpos.tui.screens.owner.context import OwnerContext

if TYPE_CHECKING:
    from qrpos.ledger import SaleResult

REVIEW_COLUMNS = ("sale", "amount", "time", "reason")
CANDIDATE_COLUMNS = ("amount", "time", "id", "others")
#: the longest transaction id the contract allows (`tx_` and 64 letters or digits)
TX_ID_MAX = 67


@dataclass(frozen=True)
class Pending:
    """A decision waiting for the manager PIN; no decision: clear the foreign warning."""

    intent_id: int
    decision: ReviewDecision | None


def candidate_cells(candidate: ReviewCandidate) -> tuple[str, ...]:
    """A candidate row's text, in the lower table's column order."""
    tx = candidate.transaction
    others = ", ".join(f"#{n}" for n in candidate.other_intents)
    return (
        format_mnt(tx.amount_mnt),
        local_datetime(tx.created_at),
        tx.id,
        t("review.also_claimed", sales=others) if others else "—",
    )


def decision_text(decision: ReviewDecision, sale: int) -> str:
    """The question the owner confirms with the PIN."""
    if isinstance(decision, MarkCharged):
        return t("review.confirm_charged", tx=decision.tx_id, sale=sale)
    if isinstance(decision, RefundRow):
        return t("review.confirm_refund", tx=decision.tx_id, sale=sale)
    return t("review.confirm_not_charged", sale=sale)


def settled_text(result: SaleResult, decision: ReviewDecision | None = None) -> tuple[str, bool]:
    """What the owner reads once the decision is stored (and a refund sent); a named row
    the kiosk could not check (no transaction read) is said to be unchecked."""
    sale = result.intent_id
    tx = getattr(decision, "tx_id", None)
    if tx is not None and result.transaction is None:
        if result.state is IntentState.REFUNDED_PER_REVIEW:
            return t("review.done_refund_unchecked", sale=sale, tx=tx), True
        if result.state is IntentState.CHARGED_PER_REVIEW:
            return t("review.done_charged_unchecked", sale=sale, tx=tx), True
    if result.state is IntentState.REFUNDED_PER_REVIEW:
        return t("review.done_refund", sale=sale), True
    if result.state is IntentState.CHARGED_PER_REVIEW:
        return t("review.done_charged", sale=sale), True
    if result.state is IntentState.NOT_CHARGED:
        return t("review.done_not_charged", sale=sale), True
    return t("review.done_other", sale=sale, state=str(result.state)), True


class ReviewsScreen(Screen[None]):
    """The owner's list of payments to check, and the three decisions."""

    CSS_PATH: ClassVar[list[str | PurePath]] = ["owner.tcss", "reviews.tcss"]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c,C", "decide('charged')", "this sale", show=False),
        Binding("r,R", "decide('refund')", "refund", show=False),
        Binding("n,N", "decide('not_charged')", "not charged", show=False),
        Binding("t,T", "type_tx", "type a transaction", show=False),
        Binding("f,F", "clear_foreign", "clear warning", show=False),
        Binding("f5", "refresh", "refresh", show=False),
        Binding("escape", "back", "back", show=False),
    ]

    def __init__(self, ctx: OwnerContext) -> None:
        super().__init__(classes="owner")
        self.ctx = ctx
        self.reviews: dict[int, ReviewView] = {}
        self.foreign = False
        self.pending: Pending | None = None
        #: a transaction id the owner typed (from the merchant dashboard), for C or R
        self.named: str | None = None
        self.busy = False
        #: the last answer shown (for tests and for the owner's eyes)
        self.outcome: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(t("review.title"), id="title", markup=False)
        yield Static("", id="foreign", markup=False)
        yield Static(t("history.loading"), id="state", markup=False)
        reviews: DataTable[str] = DataTable(id="reviews", cursor_type="row")
        for key in REVIEW_COLUMNS:
            reviews.add_column(t(f"review.col.{key}"), key=key)
        yield reviews
        yield Static(t("review.rows"), id="rows-title", markup=False)
        rows: DataTable[str] = DataTable(id="candidates", cursor_type="row")
        for key in CANDIDATE_COLUMNS:
            rows.add_column(t(f"review.col.{key}"), key=key)
        yield rows
        yield Input(
            placeholder=t("review.tx_prompt"),
            id="tx",
            max_length=TX_ID_MAX,
            restrict=r"[A-Za-z0-9_]*",
        )
        yield Input(
            placeholder=t("reverse.pin_prompt"),
            password=True,
            id="pin",
            max_length=12,
            restrict=r"[0-9]*",
        )
        yield Static("", id="answer", markup=False)
        yield Static(t("review.hint"), id="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#pin", Input).display = False
        self.query_one("#tx", Input).display = False
        self.load()

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        await self.recompose()
        self.query_one("#pin", Input).display = False
        self.query_one("#tx", Input).display = False
        self.load()

    # --- loading ------------------------------------------------------------------------

    @work(exclusive=True, group="owner-reviews", exit_on_error=False)
    async def load(self) -> None:
        """Read the open reviews and the foreign-activity record (SQLite, off the loop)."""
        desk = self.ctx.services.desk
        if desk is None:
            self.say(t("reverse.not_paired"))
            return
        views, foreign = await asyncio.to_thread(
            lambda: (desk.listing.reviews(), desk.listing.foreign_activity())
        )
        self.reviews = {int(v.intent.id): v for v in views}
        self.foreign = foreign is not None
        table: DataTable[str] = self.query_one("#reviews", DataTable)
        table.clear()
        for sale, view in self.reviews.items():
            table.add_row(
                f"#{sale}",
                format_mnt(view.intent.amount_mnt or 0),
                local_datetime(view.intent.created_at),
                review_reason(view.reason),
                key=str(sale),
            )
        banner = self.query_one("#foreign", Static)
        banner.update(t("review.foreign", count=foreign.count) if foreign else "")
        banner.set_class(foreign is not None, "offline")
        self.query_one("#state", Static).update(
            t("review.count", count=len(self.reviews)) if self.reviews else t("review.empty")
        )
        self.show_candidates()
        if self.reviews:
            table.focus()

    def selected(self) -> ReviewView | None:
        """The review under the upper table's cursor."""
        table: DataTable[str] = self.query_one("#reviews", DataTable)
        if not self.reviews or table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.reviews.get(int(key or 0))

    def show_candidates(self) -> None:
        """Fill the lower table with the selected review's rows."""
        rows: DataTable[str] = self.query_one("#candidates", DataTable)
        rows.clear()
        view = self.selected()
        if view is None:
            return
        for candidate in view.candidates:
            rows.add_row(*candidate_cells(candidate), key=candidate.transaction.id)

    @on(DataTable.RowHighlighted, "#reviews")
    def review_moved(self) -> None:
        if self.pending is None:
            self.named = None  # a typed id is for the sale it was typed at
        self.show_candidates()

    # --- deciding -----------------------------------------------------------------------

    def say(self, text: str, *, good: bool = False) -> None:
        self.outcome = text
        answer = self.query_one("#answer", Static)
        answer.update(text)
        answer.set_class(not good, "error")
        answer.set_class(good, "good")

    def action_decide(self, what: str) -> None:
        """Choose a decision for the selected sale; the PIN confirms it."""
        if self.busy:
            return
        view = self.selected()
        if view is None:
            self.say(t("review.empty"), good=True)
            return
        sale = int(view.intent.id)
        decision: ReviewDecision
        if what == "not_charged":
            decision = MarkNotCharged()
        elif self.named is not None:
            decision = MarkCharged(self.named) if what == "charged" else RefundRow(self.named)
        else:
            rows: DataTable[str] = self.query_one("#candidates", DataTable)
            if rows.row_count == 0:
                self.say(t("review.no_row"))
                return
            tx_id = rows.coordinate_to_cell_key(rows.cursor_coordinate).row_key.value or ""
            decision = MarkCharged(tx_id) if what == "charged" else RefundRow(tx_id)
        self.ask_pin(Pending(sale, decision), decision_text(decision, sale))

    def action_type_tx(self) -> None:
        """Type a transaction id the review did not offer (read on the merchant dashboard)."""
        if self.busy or self.pending is not None or self.selected() is None:
            return
        field = self.query_one("#tx", Input)
        field.display = True
        field.focus()

    @on(Input.Submitted, "#tx")
    def tx_entered(self) -> None:
        field = self.query_one("#tx", Input)
        typed, field.value = field.value.strip(), ""
        field.display = False
        self.named = typed or None
        if self.named is not None:
            self.say(t("review.named", tx=escape_text(self.named)), good=True)
        self.query_one("#reviews", DataTable).focus()

    def action_clear_foreign(self) -> None:
        """Clear the warning about another device (after it was re-paired)."""
        if self.busy:
            return
        if not self.foreign:
            self.say(t("review.no_foreign"), good=True)
            return
        self.ask_pin(Pending(0, None), t("review.confirm_clear"))

    def ask_pin(self, pending: Pending, question: str) -> None:
        self.pending = pending
        self.say(question, good=True)
        pin = self.query_one("#pin", Input)
        pin.display = True
        pin.focus()

    @on(Input.Submitted, "#pin")
    def pin_entered(self) -> None:
        pin_input = self.query_one("#pin", Input)
        pin, pin_input.value = pin_input.value, ""
        if self.busy or self.pending is None:
            return
        if not pin:
            self.say(t("reverse.pin_empty"))
            return
        self.busy = True
        self.settle(self.pending, pin)

    @work(exclusive=True, group="owner-review-settle", exit_on_error=False)
    async def settle(self, pending: Pending, pin: str) -> None:
        """Check the PIN (slow hash, off the event loop), then store the decision."""
        try:
            desk, refusal = await self.ctx.desk_behind_pin(pin)
            if desk is None:
                self.say(refusal or "")
                self.ctx.count_down(self, self.say)
                return
            if pending.decision is None:
                await asyncio.to_thread(desk.clear_foreign_activity)
                text, good = t("review.cleared"), True
            else:
                self.say(t("review.working", sale=pending.intent_id), good=True)
                try:
                    result = await desk.settle_review(pending.intent_id, pending.decision)
                except ReviewRefused as exc:
                    self.say(t("review.refused", message=escape_text(error_words(exc))))
                    return
                text, good = settled_text(result, pending.decision)
                self.named = None
            self.pending = None
            self.query_one("#pin", Input).display = False
            self.load()
            self.say(text, good=good)
        finally:
            self.busy = False

    def action_refresh(self) -> None:
        self.load()

    def action_back(self) -> None:
        field = self.query_one("#tx", Input)
        if field.display or (self.named is not None and self.pending is None):
            field.value, field.display, self.named = "", False, None
            self.say("")
            self.query_one("#reviews", DataTable).focus()
            return
        if self.pending is not None:
            self.pending = None
            self.query_one("#pin", Input).display = False
            self.say("")
            return
        self.dismiss(None)
