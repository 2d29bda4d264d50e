"""The owner menu: history, reversal, end of day, language; drives the VAT follow-up."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from qrpos.tui.i18n import current_language, set_language, t
from qrpos.tui.screens.owner.context import OwnerContext
from qrpos.tui.screens.owner.messages import ReceiptsChanged, ReversalDone
from qrpos.tui.services import KioskServices


class OwnerMenuScreen(Screen[None]):
    """Entry point of the owner's screens (pushed by the kiosk with its services)."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "history", t("owner.history"), show=False),
        Binding("2", "reverse", t("owner.reverse"), show=False),
        Binding("3", "end_of_day", t("owner.end_of_day"), show=False),
        Binding("l", "language", "language", show=False),
        Binding("escape", "back", "back", show=False),
    ]

    def __init__(
        self, services: KioskServices, *, first_poll_s: float = 0.5, history_page_size: int = 50
    ) -> None:
        super().__init__(classes="owner")
        self.services = services
        self.ctx = OwnerContext(services)
        self.first_poll_s = first_poll_s
        self.history_page_size = history_page_size
        self._poll_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(t("owner.title"), id="title", markup=False)
        with Vertical(id="body"):
            yield Static(f"1  {t('owner.history')}", markup=False)
            yield Static(f"2  {t('owner.reverse')}", markup=False)
            yield Static(f"3  {t('owner.end_of_day')}", markup=False)
            yield Static(f"L  {t('owner.language')}", markup=False)
            yield Static("", id="vat-status", markup=False)
        yield Static(t("owner.hint"), id="hint", markup=False)

    def on_mount(self) -> None:
        self.schedule_poll(self.first_poll_s)

    def on_unmount(self) -> None:
        if self._poll_timer is not None:
            self._poll_timer.stop()
        self.ctx.close()

    # --- VAT follow-up: a timer that re-arms itself only while something is moving -----

    def schedule_poll(self, delay_s: float) -> None:
        """Poll the history after `delay_s` (replacing any earlier plan)."""
        if self._poll_timer is not None:
            self._poll_timer.stop()
        self._poll_timer = self.set_timer(delay_s, self.poll_vat)

    @work(exclusive=True, group="owner-vat", exit_on_error=False)
    async def poll_vat(self) -> None:
        """One round of the VAT follow-up; tells the screen on top what changed."""
        self._poll_timer = None
        follow = self.ctx.vat
        if follow is None:
            return
        result = await follow.poll_once()
        if result.changed:
            for screen in self.app.screen_stack:
                screen.post_message(ReceiptsChanged(result.changed))
        status = self.query_one("#vat-status", Static)
        if result.rate_limited and result.next_delay_s is not None:
            status.update(t("history.busy", seconds=round(result.next_delay_s)))
        else:
            status.update(
                t("history.following", count=len(self.ctx.cache.followed()))
                if self.ctx.cache and result.next_delay_s is not None
                else ""
            )
        if result.next_delay_s is not None:
            self.schedule_poll(result.next_delay_s)

    def on_reversal_done(self, message: ReversalDone) -> None:
        if (follow := self.ctx.vat) is not None:
            follow.follow_reversal(message.tx_id)
        self.schedule_poll(0.1)

    # --- keys ---------------------------------------------------------------------------

    def action_history(self) -> None:
        from qrpos.tui.screens.owner.history import HistoryScreen

        self.app.push_screen(HistoryScreen(self, page_size=self.history_page_size))

    def action_reverse(self) -> None:
        from qrpos.tui.screens.owner.reversal import ReversalScreen

        self.app.push_screen(ReversalScreen(self))

    def action_end_of_day(self) -> None:
        from qrpos.tui.screens.owner.endofday import EndOfDayScreen

        self.app.push_screen(EndOfDayScreen(self))

    def action_language(self) -> None:
        set_language("en" if current_language() == "mn" else "mn")
        self.refresh(recompose=True)

    def action_back(self) -> None:
        self.dismiss(None)
