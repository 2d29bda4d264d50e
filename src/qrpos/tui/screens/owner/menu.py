"""The owner menu: history, reversal, end of day, payments to check, quick prices,
language.

The VAT follow-up is the app's (`ReceiptFollower`, all day, in the kiosk); opening the
menu only asks it for a fresh poll. A host app without one gets a follower for the
length of the visit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from qrpos.present.i18n import t
from qrpos.tui.receipts import ReceiptFollower
from qrpos.tui.screens.base import LanguageChanged
from qrpos.tui.screens.owner.context import OwnerContext
from qrpos.tui.screens.owner.endofday import EndOfDayScreen
from qrpos.tui.screens.owner.history import HistoryScreen
from qrpos.tui.screens.owner.messages import VatFollowUpPolled
from qrpos.tui.screens.owner.pin import PinDialog
from qrpos.tui.screens.owner.prices import PricesScreen
from qrpos.tui.screens.owner.reversal import ReversalScreen
from qrpos.tui.screens.owner.reviews import ReviewsScreen
from qrpos.tui.screens.owner.shift import ShiftScreen
from qrpos.tui.services import KioskServices


class OwnerMenuScreen(Screen[None]):
    """Entry point of the owner's screens (pushed by the kiosk with its services)."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "history", "history", show=False),
        Binding("2", "reverse", "reverse", show=False),
        Binding("3", "end_of_day", "end of day", show=False),
        Binding("4", "reviews", "payments to check", show=False),
        Binding("5", "prices", "quick prices", show=False),
        Binding("6", "shift", "shift", show=False),
        # the app's switch: every screen changes language, and the choice is remembered
        Binding("l", "app.language", "language", show=False),
        Binding("escape", "back", "back", show=False),
    ]

    def __init__(
        self,
        services: KioskServices,
        *,
        follower: ReceiptFollower | None = None,
        first_poll_s: float = 0.5,
        history_page_size: int = 50,
    ) -> None:
        super().__init__(classes="owner")
        self.services = services
        self.first_poll_s = first_poll_s
        self.history_page_size = history_page_size
        #: the kiosk's follower (None: this visit makes its own)
        self._follower = follower
        self._own_follower = False
        self._ctx: OwnerContext | None = None

    @property
    def follower(self) -> ReceiptFollower:
        """The app's receipt follower, or one of this visit's own (a host without one)."""
        if self._follower is None:
            self._follower = ReceiptFollower(self.app, lambda: self.services)
            self._own_follower = True
        return self._follower

    @property
    def ctx(self) -> OwnerContext:
        """What the owner's screens share, over the follower's history cache."""
        if self._ctx is None:
            follower = self.follower
            self._ctx = OwnerContext(self.services, follower, shared_cache=follower.cache)
        return self._ctx

    def compose(self) -> ComposeResult:
        yield Static(t("owner.title"), id="title", markup=False)
        with Vertical(id="body"):
            yield Static(f"1  {t('owner.history')}", markup=False)
            yield Static(f"2  {t('owner.reverse')}", markup=False)
            yield Static(f"3  {t('owner.end_of_day')}", markup=False)
            yield Static(f"4  {t('owner.reviews')}", markup=False)
            yield Static(f"5  {t('owner.prices')}", markup=False)
            yield Static(f"6  {t('owner.shift')}", markup=False)
            yield Static(f"L  {t('owner.language')}", markup=False)
            yield Static("", id="vat-status", markup=False)
        yield Static(t("owner.hint"), id="hint", markup=False)

    def on_mount(self) -> None:
        self.schedule_poll(self.first_poll_s)

    def on_unmount(self) -> None:
        if self._ctx is not None:
            self._ctx.close()
        if self._own_follower and self._follower is not None:
            self._follower.stop()

    # --- VAT follow-up: the app's follower; the menu asks for fresh data ------------

    def schedule_poll(self, delay_s: float) -> None:
        """Ask the follower for a poll after `delay_s` (replacing any earlier plan)."""
        self.follower.schedule(delay_s)

    def on_vat_follow_up_polled(self, message: VatFollowUpPolled) -> None:
        status = self.query_one("#vat-status", Static)
        if message.rate_limited and message.next_delay_s is not None:
            status.update(t("history.busy", seconds=round(message.next_delay_s)))
        elif message.next_delay_s is not None:
            status.update(t("history.following", count=message.following))
        else:
            status.update("")

    # --- keys ---------------------------------------------------------------------------

    def _behind_pin(self, name: str, title: str, open_screen: Callable[[], Screen[None]]) -> None:
        """Open a screen, first asking for the manager PIN if the shop guards it."""
        if name not in self.services.config.owner_pin_screens:
            self.app.push_screen(open_screen())
            return

        def answered(ok: bool | None) -> None:
            if ok:
                self.app.push_screen(open_screen())

        self.app.push_screen(PinDialog(self.ctx, title), answered)

    def action_history(self) -> None:
        self._behind_pin(
            "history",
            t("history.title"),
            lambda: HistoryScreen(self.ctx, page_size=self.history_page_size),
        )

    def action_reverse(self) -> None:
        self.app.push_screen(ReversalScreen(self.ctx))

    def action_end_of_day(self) -> None:
        self._behind_pin("end_of_day", t("eod.title"), lambda: EndOfDayScreen(self.ctx))

    def action_reviews(self) -> None:
        self.app.push_screen(ReviewsScreen(self.ctx))

    def action_prices(self) -> None:
        self.app.push_screen(PricesScreen(self.ctx))

    def action_shift(self) -> None:
        self.app.push_screen(ShiftScreen(self.ctx))

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        await self.recompose()

    def action_back(self) -> None:
        self.dismiss(None)
