"""The shift: who is on, the open shift's X report, and its Z.

With no shift open, digits 1–9 choose the cashier who starts; their PIN opens the shift.
With one open, its X report is on screen (as `qrpos shift x` prints it); `Z` closes it
with the cashier's PIN, `M` with the manager's: the Z is taken, reconciled with the
service's history of the shift when it answers, shown, and never changes again.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from qrpos.present.format import format_mnt
from qrpos.present.i18n import t
from qrpos.present.shifts import report_lines
from qrpos.present.words import error_words
from qrpos.service.models import format_rfc3339
from qrpos.tui.messages import ShiftChanged
from qrpos.tui.screens.base import LanguageChanged
from qrpos.tui.screens.owner.context import OwnerContext
from qrpos.tui.screens.owner.pin import PinDialog

if TYPE_CHECKING:
    from qrpos.ledger.shifts import Cashier, Shift
    from qrpos.reports.pin_gate import PinGate


def cashier_gate(ctx: OwnerContext, cashier: Cashier) -> PinGate:
    """The cashier's PIN behind the manager PIN's pause (a throttle file of its own)."""
    from qrpos.reports.pin_gate import PinGate

    return PinGate.for_cashier(ctx.services.config.state_dir, cashier.id, cashier.pin_record)


class ShiftScreen(Screen[None]):
    """Open a cashier's shift, read its X, take its Z."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(str(n), f"start({n})", "start", show=False) for n in range(1, 10)),
        Binding("z,Z", "close(False)", "Z", show=False),
        Binding("m,M", "close(True)", "Z by the manager", show=False),
        Binding("c,C", "cashiers", "cashiers", show=False),
        Binding("f5", "refresh", "refresh", show=False),
        Binding("escape", "back", "back", show=False),
    ]

    def __init__(self, ctx: OwnerContext) -> None:
        super().__init__(classes="owner")
        self.ctx = ctx
        self.cashiers: list[Cashier] = []
        self.shift: Shift | None = None
        self.busy = False
        #: the Z just taken, shown until the screen is left
        self.z_report: dict[str, Any] | None = None
        #: counts what was asked of the report's space: an X worker draws only if nothing
        #: was asked after it (a slow Pi's X, computed before the Z, must not replace it)
        self._asked = 0

    def compose(self) -> ComposeResult:
        yield Static(t("shift.title"), id="title", markup=False)
        with VerticalScroll(id="body"):
            yield Static(t("history.loading"), id="shift-report", markup=False)
        yield Static("", id="hint", markup=False)

    def on_mount(self) -> None:
        self.load()

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        await self.recompose()
        self.show()

    @property
    def _ledger(self) -> Any:
        desk = self.ctx.services.desk
        return desk.ledger if desk is not None else None

    @work(exclusive=True, group="owner-shift", exit_on_error=False)
    async def load(self) -> None:
        from qrpos.ledger.shifts import cashiers, current_shift

        ledger = self._ledger
        if ledger is None:
            self.cashiers, self.shift = [], None
        else:
            self.cashiers = await asyncio.to_thread(cashiers, ledger)
            self.shift = await asyncio.to_thread(current_shift, ledger)
        self.show()

    def show(self) -> None:
        """The Z just taken, the open shift's X, or who may start one."""
        report = self.query_one("#shift-report", Static)
        hint = self.query_one("#hint", Static)
        self._asked += 1
        if self._ledger is None:
            report.update(t("reverse.not_paired"))
            hint.update(t("shift.hint_back"))
        elif self.z_report is not None:
            report.update("\n".join(report_lines(self.z_report)))
            hint.update(t("shift.hint_back"))
        elif self.shift is not None:
            self.show_x(self.shift, self._asked)
            hint.update(t("shift.hint_open"))
        elif not self.cashiers:
            report.update(t("shift.no_cashiers"))
            hint.update(t("shift.hint_back"))
        else:
            lines = [t("shift.none_open"), ""]
            lines += [f"{n}  {c.name}" for n, c in enumerate(self.cashiers[:9], start=1)]
            report.update("\n".join(lines))
            hint.update(t("shift.hint_start"))

    @work(exclusive=True, group="owner-shift-x", exit_on_error=False)
    async def show_x(self, shift: Shift, asked: int) -> None:
        """The open shift's X, and today's shifts by cashier under it; drawn only while
        nothing was asked of the report's space since (`asked`): the newest request wins."""
        from qrpos.ledger.shifts import by_cashier, figures, shifts
        from qrpos.reports.localday import local_day_of

        ledger = self._ledger
        shown = await asyncio.to_thread(figures, ledger, shift.id)
        x = {
            "cashier": shift.cashier,
            "opened_at": format_rfc3339(shift.opened_at),
            **shown.to_json(),
        }
        day = local_day_of(self.ctx.services.clock())
        today = [
            s for s in await asyncio.to_thread(shifts, ledger) if local_day_of(s.opened_at) == day
        ]
        totals = await asyncio.to_thread(by_cashier, ledger, today)
        lines = [*report_lines(x, now=self.ctx.services.clock()), "", t("cli.shift.today")]
        for name, sums in sorted(totals.items()):
            count = t("cli.shift.sales_n", count=sums.sales)
            lines.append(f"  {name[:24]:<24} {count:<16} {format_mnt(sums.sales_mnt):>14}")
        if asked == self._asked:
            self.query_one("#shift-report", Static).update("\n".join(lines))

    # --- keys ---------------------------------------------------------------------------

    def action_start(self, number: int) -> None:
        """A cashier starts a shift with their PIN."""
        if self.busy or self.shift is not None or self.z_report is not None:
            return
        if not 1 <= number <= len(self.cashiers):
            return
        cashier = self.cashiers[number - 1]

        def answered(ok: bool | None) -> None:
            if ok:
                self.open_for(cashier)

        self.app.push_screen(
            PinDialog(
                self.ctx,
                t("shift.title"),
                gate=cashier_gate(self.ctx, cashier),
                asked=t("shift.pin_asked", name=cashier.name),
                prompt=t("shift.pin_prompt"),
            ),
            answered,
        )

    @work(exclusive=True, group="owner-shift", exit_on_error=False)
    async def open_for(self, cashier: Cashier) -> None:
        from qrpos.ledger.shifts import ShiftError, open_shift

        try:
            self.shift = await asyncio.to_thread(
                open_shift, self._ledger, cashier, at=self.ctx.services.clock()
            )
        except ShiftError as exc:
            self.notify(error_words(exc), severity="error", markup=False)
        self.app.post_message(ShiftChanged(self.shift.cashier if self.shift else None))
        self.show()

    def action_close(self, by_manager: bool) -> None:
        """The Z: the cashier's PIN (`Z`) or the manager's (`M`)."""
        shift = self.shift
        if self.busy or shift is None:
            return
        cashier = next((c for c in self.cashiers if c.id == shift.cashier_id), None)
        if by_manager or cashier is None:
            dialog = PinDialog(self.ctx, t("shift.z_title"))
        else:
            dialog = PinDialog(
                self.ctx,
                t("shift.z_title"),
                gate=cashier_gate(self.ctx, cashier),
                asked=t("shift.pin_asked", name=cashier.name),
                prompt=t("shift.pin_prompt"),
            )

        def answered(ok: bool | None) -> None:
            if ok:
                self.take_z(shift, by_manager or cashier is None)

        self.app.push_screen(dialog, answered)

    @work(exclusive=True, group="owner-shift", exit_on_error=False)
    async def take_z(self, shift: Shift, by_manager: bool) -> None:
        from qrpos.ledger.shifts import take_z

        self.busy = True
        # the X under way is of the shift being closed: it is not drawn over the Z
        self._asked += 1
        self.workers.cancel_group(self, "owner-shift-x")
        try:
            now = self.ctx.services.clock()
            self.query_one("#shift-report", Static).update(t("shift.taking_z"))
            reconciliation = await self.reconcile(shift.opened_at, now)
            closed = await asyncio.to_thread(
                take_z,
                self._ledger,
                shift,
                at=now,
                by="manager" if by_manager else "cashier",
                reconciliation=reconciliation,
            )
            self.shift, self.z_report = None, closed.z_report
            self.app.post_message(ShiftChanged(None))
            printing = self.ctx.services.printing
            if printing is not None and closed.z_report is not None:
                await asyncio.to_thread(printing.print_z, closed.z_report)
        finally:
            self.busy = False
        self.show()

    async def reconcile(self, from_utc: datetime, to_utc: datetime) -> dict[str, Any]:
        """The shift's sales against the service's history of its span; offline: why not."""
        from qrpos.reports.endofday import shift_reconciliation

        services = self.ctx.services
        until = max(to_utc, datetime.now(UTC))
        book = services.desk.listing if services.desk is not None else None
        return await shift_reconciliation(services.client, book, from_utc, until)

    def action_cashiers(self) -> None:
        """The cashiers: add, re-PIN, rename, remove (behind the manager PIN)."""
        from qrpos.tui.screens.owner.cashiers import CashiersScreen

        def back(_: None) -> None:
            self.z_report = None
            self.load()

        self.app.push_screen(CashiersScreen(self.ctx), back)

    def action_refresh(self) -> None:
        if self.busy:
            # a Z is being taken: reloading would cancel its worker while the ledger's
            # thread closes the shift, and draw the closed shift's X instead of its Z
            return
        self.z_report = None
        self.load()

    def action_back(self) -> None:
        self.dismiss(None)
