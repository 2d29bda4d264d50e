"""End of day: the day's totals, an hourly takings chart, the reconciliation, CSV export.

The numbers come from `qrpos.reports.end_of_day`, the same function as `qrpos report`.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

from qrpos.present.format import format_mnt
from qrpos.present.i18n import t
from qrpos.present.owner import date_line, listing_failure, reconciliation_lines, summary_lines
from qrpos.present.words import error_words
from qrpos.reports import EndOfDay, ExportError, end_of_day
from qrpos.reports.chart import hourly_rows
from qrpos.service import ListingFailed
from qrpos.tui.screens.base import LanguageChanged
from qrpos.tui.screens.owner.context import OwnerContext

CHART_WIDTH = 40


def chart_text(eod: EndOfDay) -> Text:
    """The hourly chart: green block bars (16-colour safe) with the hour and amount."""
    out = Text()
    for row in hourly_rows(eod.hourly, CHART_WIDTH):
        out.append(f"{row.hour:02d} ", style="cyan")
        out.append(f"{row.bar:<{CHART_WIDTH}}", style="green")
        out.append(f" {format_mnt(row.gross_mnt)}\n")
    return out


def aligned(rows: list[tuple[str, str]], room: int) -> str:
    """Labels in one column and values beside them; a value that would not fit beside its
    label goes on the next line, indented, whole (never broken in the middle)."""
    width = max(cell_len(label) for label, _ in rows)
    lines = []
    for label, value in rows:
        if width + 2 + cell_len(value) <= room:
            lines.append(label + " " * (width - cell_len(label)) + "  " + value)
        else:
            lines.extend((label, "  " + value))
    return "\n".join(lines)


class ExportDialog(ModalScreen[Path | None]):
    """Asks where to write the CSV (a USB stick's mount point, typically)."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel", show=False)]

    def __init__(self, suggestion: Path) -> None:
        super().__init__(classes="owner")
        self.suggestion = suggestion

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Static(t("eod.export_prompt"), id="title", markup=False)
            yield Input(value=str(self.suggestion), id="path")
            yield Static(t("eod.export_hint"), classes="hint", markup=False)

    @on(Input.Submitted, "#path")
    def chosen(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(Path(value).expanduser() if value else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class EndOfDayScreen(Screen[None]):
    """One local day's totals; ←/→ move between days."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "day(-1)", "previous day", show=False, priority=True),
        Binding("right", "day(1)", "next day", show=False, priority=True),
        Binding("t,T", "today", "today", show=False),
        Binding("e,E", "export", "export", show=False),
        Binding("p,P", "print_day", "print", show=False),
        Binding("f5", "refresh", "refresh", show=False),
        Binding("escape", "back", "back", show=False),
    ]

    def __init__(self, ctx: OwnerContext, *, day: date | None = None) -> None:
        super().__init__(classes="owner")
        self.ctx = ctx
        self.day = day or ctx.today()
        #: the totals on screen (None while loading or after a failure)
        self.eod: EndOfDay | None = None

    def compose(self) -> ComposeResult:
        yield Static(t("eod.title"), id="title", markup=False)
        with VerticalScroll(id="body"):
            yield Static("", id="eod-date", markup=False)
            yield Static("", id="eod-summary", markup=False)
            yield Static(t("eod.chart"), classes="eod-heading", markup=False)
            yield Static("", id="eod-chart", markup=False)
            yield Static(t("eod.reconciliation"), classes="eod-heading", markup=False)
            yield Static("", id="eod-reconciliation", markup=False)
        hint = "eod.hint_printer" if self.ctx.services.printing else "eod.hint"
        yield Static(t(hint), id="hint", markup=False)

    def on_mount(self) -> None:
        self.load()

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        await self.recompose()
        if self.eod is not None:
            self.show(self.eod)
        else:
            self.load()

    async def compute(self, csv_path: Path | None = None) -> EndOfDay | None:
        """The day's totals (and the CSV), or None after saying why on screen."""
        client = self.ctx.services.client
        if client is None:
            self.show_error(t("reverse.not_paired"))
            return None
        try:
            desk = self.ctx.services.desk
            book = desk.listing if desk is not None else None
            return await end_of_day(client, self.day, ledger=book, csv_path=csv_path)
        except ListingFailed as exc:
            self.show_error(t("eod.failed", reason=listing_failure(exc.outcome)))
        except ExportError as exc:
            self.notify(
                t("eod.export_failed", message=error_words(exc)), severity="error", markup=False
            )
        return None

    @work(exclusive=True, group="owner-eod", exit_on_error=False)
    async def load(self) -> None:
        self.eod = None
        self.query_one("#eod-date", Static).update(t("eod.loading", day=self.day.isoformat()))
        for name in ("#eod-summary", "#eod-chart", "#eod-reconciliation"):
            self.query_one(name, Static).update("")
        eod = await self.compute()
        if eod is not None:
            self.show(eod)

    def show(self, eod: EndOfDay) -> None:
        self.eod = eod
        self.query_one("#eod-date", Static).update(date_line(eod))
        summary = self.query_one("#eod-summary", Static)
        summary.update(aligned(summary_lines(eod), summary.content_region.width or 76))
        self.query_one("#eod-chart", Static).update(chart_text(eod))
        rec = self.query_one("#eod-reconciliation", Static)
        rec.update("\n".join(reconciliation_lines(eod)))
        rec.set_class(eod.reconciliation is not None and not eod.reconciliation.clean, "error")

    def show_error(self, text: str) -> None:
        self.query_one("#eod-date", Static).update(text)

    def action_day(self, step: int) -> None:
        self.day += timedelta(days=step)
        self.load()

    def action_today(self) -> None:
        self.day = self.ctx.today()
        self.load()

    def action_refresh(self) -> None:
        self.load()

    def action_print_day(self) -> None:
        """The day's totals on paper, as the screen shows them (once they are loaded)."""
        printing = self.ctx.services.printing
        eod = self.eod
        if printing is None or eod is None:
            return
        self.run_worker(lambda: printing.print_end_of_day(eod), thread=True, exit_on_error=False)
        self.notify(t("eod.printing", day=eod.day.isoformat()), markup=False)

    def action_export(self) -> None:
        suggestion = self.ctx.services.config.export_home / f"qrpos-{self.day.isoformat()}.csv"
        self.app.push_screen(ExportDialog(suggestion), self.export_to)

    def export_to(self, path: Path | None) -> None:
        if path is not None:
            self.export(path)

    @work(exclusive=True, group="owner-eod", exit_on_error=False)
    async def export(self, path: Path) -> None:
        eod = await self.compute(csv_path=path)
        if eod is not None:
            self.show(eod)
            rows = eod.charges_count + eod.reversed_count
            self.notify(t("eod.exported", rows=rows, path=str(path)), markup=False)

    def action_back(self) -> None:
        self.dismiss(None)
