"""History: this terminal's transactions, newest first, paged lazily, by local day."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from qrpos import spec
from qrpos.present.format import format_mnt
from qrpos.present.i18n import t
from qrpos.present.owner import status_text, vat_text
from qrpos.present.words import words
from qrpos.reports.history import HistoryCursor, HistoryPage, matches, with_refunds_here
from qrpos.reports.localday import to_local
from qrpos.service import Transaction
from qrpos.tui.screens.base import LanguageChanged
from qrpos.tui.screens.owner.context import OwnerContext
from qrpos.tui.screens.owner.messages import ReceiptsChanged
from qrpos.tui.screens.owner.reversal import ReversalScreen

COLUMNS = ("time", "amount", "status", "vat", "id")
#: cells shown this wide so the table fits 80 columns with every header whole; the id
#: shows its last ID_TAIL characters (what an owner reads out), and the highlighted
#: row's full id and VAT receipt number (33 digits) are spelled out under the table
WIDTHS = {"time": 14, "amount": 11, "status": 11, "vat": 13, "id": 13}
ID_TAIL = 12


class HistoryScreen(Screen[None]):
    """The owner's history. The next page is fetched when the cursor reaches the end."""

    CSS_PATH = "owner.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r,R", "reverse", "reverse", show=False),
        Binding("left", "day(-1)", "previous day", show=False, priority=True),
        Binding("right", "day(1)", "next day", show=False, priority=True),
        Binding("a,A", "all_days", "all days", show=False),
        Binding("p,P", "print_copy", "print a copy", show=False),
        Binding("f,F", "find", "find", show=False),
        Binding("f5", "refresh", "refresh", show=False),
        Binding("pagedown", "more", "more", show=False),
        Binding("escape", "back", "back", show=False),
    ]

    def __init__(self, ctx: OwnerContext, *, page_size: int = 50) -> None:
        super().__init__(classes="owner")
        self.ctx = ctx
        self.page_size = page_size
        self.day: date | None = None
        self.rows: dict[str, Transaction] = {}
        self.next: HistoryCursor | None = None
        self.last_page: HistoryPage | None = None
        #: what the owner looks for (`F`): an amount, a time, an id's last characters
        self.find = ""

    def compose(self) -> ComposeResult:
        yield Static(t("history.title"), id="title", markup=False)
        yield Static("", id="banner", classes="prose", markup=False)
        table: DataTable[str] = DataTable(id="history", cursor_type="row", zebra_stripes=True)
        for key in COLUMNS:
            table.add_column(t(f"history.{key}"), key=key, width=WIDTHS[key])
        yield table
        yield Static("", id="selected", markup=False)
        yield Static("", id="more", markup=False)
        yield Input(self.find, placeholder=t("history.find_prompt"), id="find", max_length=40)
        hint = "history.hint_printer" if self.ctx.services.printing else "history.hint"
        yield Static(t(hint), id="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#find", Input).display = bool(self.find)
        self.reload()

    @on(LanguageChanged)
    async def _language_changed(self) -> None:
        # the headers and every row's words change: compose again and read the rows anew
        await self.recompose()
        self.reload()

    # --- loading ------------------------------------------------------------------------

    def reload(self) -> None:
        """Start again from the newest row (of the chosen day)."""
        self.query_one(DataTable).clear()
        self.rows.clear()
        self.next = None
        self.query_one("#more", Static).update(t("history.loading"))
        self.load_page(None)

    @work(exclusive=True, group="owner-history", exit_on_error=False)
    async def load_page(self, cursor: HistoryCursor | None) -> None:
        """Fetch one page (from the service, or the cache when offline) and append it."""
        page = await self.ctx.feed().page(day=self.day, cursor=cursor, limit=self.page_size)
        self.last_page = page
        self.next = page.next
        table: DataTable[str] = self.query_one(DataTable)
        for tx in page.transactions:
            if tx.id in self.rows:
                continue
            self.rows[tx.id] = tx
            if matches(tx, self.find):
                table.add_row(*self.cells(tx), key=tx.id)
        self.show_state(page)
        if any(tx.vat_status is spec.VatStatus.PENDING for tx in page.transactions):
            self.ctx.follower.schedule(spec.POLL_INTERVAL_S)

    def show_state(self, page: HistoryPage) -> None:
        """The banner (day, online/offline) and the line under the table."""
        day = t("history.day", day=self.day.isoformat()) if self.day else t("history.all_days")
        when = to_local(page.synced_at).strftime("%Y-%m-%d %H:%M") if page.synced_at else None
        banner = self.query_one("#banner", Static)
        if page.offline:
            reason = words(page.reason)
            note = (
                t("history.offline", when=when, reason=reason)
                if when
                else t("history.offline_never", reason=reason)
            )
            if page.credentials_rejected:
                note += " · " + t("history.credentials")
            banner.update(f"{day} · {note}")
            banner.set_class(True, "offline")
        else:
            banner.update(f"{day} · {t('history.online', when=when)}")
            banner.set_class(False, "offline")
        more = self.query_one("#more", Static)
        shown = self.query_one(DataTable).row_count
        if not self.rows:
            more.update(t("history.empty"))
        elif self.find:
            key = "history.found_more" if self.next else "history.found"
            more.update(t(key, shown=shown, loaded=len(self.rows)))
        else:
            more.update(t("history.more") if self.next else t("history.end"))

    @staticmethod
    def cells(tx: Transaction) -> tuple[str, ...]:
        """The row's text, in the table's column order."""
        return (
            to_local(tx.created_at).strftime("%m-%d %H:%M:%S"),
            format_mnt(tx.amount_mnt),
            status_text(tx),
            vat_text(tx),
            "…" + tx.id[-ID_TAIL:],
        )

    @on(DataTable.RowHighlighted)
    def show_selected(self) -> None:
        """The highlighted row's id and receipt number in full (the table cuts the id)."""
        if not self.query("#selected") or not self.query(DataTable):
            return  # between two composes (a new language): drawn again by the reload
        tx = self.selected()
        line = t("history.selected", tx=tx.id, receipt=tx.vat_receipt_id or "—") if tx else ""
        self.query_one("#selected", Static).update(line)

    @on(DataTable.RowHighlighted)
    def maybe_load_more(self, event: DataTable.RowHighlighted) -> None:
        if self.next is not None and event.cursor_row >= event.data_table.row_count - 1:
            self.action_more()

    def on_receipts_changed(self, message: ReceiptsChanged) -> None:
        self.update_rows(message.transactions)

    def on_screen_resume(self) -> None:
        """Back from a refund (or any screen): a row this kiosk refunded since it was
        loaded is shown REVERSED, whether or not the history can be read again."""
        self.update_rows(self.as_now(list(self.rows.values())))

    def as_now(self, rows: list[Transaction]) -> tuple[Transaction, ...]:
        """`rows` with the refunds this kiosk landed since they were read laid over them."""
        return with_refunds_here(rows, self.ctx.refunded_here())

    def update_rows(self, rows: Iterable[Transaction]) -> None:
        """Rows loaded before, as they are now (a receipt issued, a refund landed)."""
        table: DataTable[str] = self.query_one(DataTable)
        for tx in rows:
            if tx.id not in self.rows or self.rows[tx.id] == tx:
                continue
            self.rows[tx.id] = tx
            if tx.id not in table.rows:
                continue  # loaded but not shown: the find box leaves it out
            for key, value in zip(COLUMNS, self.cells(tx), strict=True):
                table.update_cell(tx.id, key, value)
        # the line under the table follows a receipt number that just arrived
        self.show_selected()

    # --- keys ---------------------------------------------------------------------------

    def selected(self) -> Transaction | None:
        """The transaction under the cursor."""
        table: DataTable[str] = self.query_one(DataTable)
        if table.row_count == 0 or not table.is_valid_row_index(table.cursor_row):
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.rows.get(key or "")

    def action_more(self) -> None:
        if self.next is not None:
            cursor, self.next = self.next, None
            self.query_one("#more", Static).update(t("history.loading"))
            self.load_page(cursor)

    def action_reverse(self) -> None:
        tx = self.selected()
        if tx is None:
            return
        [tx] = self.as_now([tx])  # refunded since it was shown: said so, never asked again
        if tx.status is not spec.TxStatus.COMPLETED:
            self.notify(
                t("reverse.not_completed", tx=tx.id, status=status_text(tx)), severity="warning"
            )
            return
        self.app.push_screen(ReversalScreen(self.ctx, tx=tx))

    def action_print_copy(self) -> None:
        """A copy of the selected sale's slip as the history has it now (its ДДТД once
        issued): queued for the printer, never a second sale."""
        printing = self.ctx.services.printing
        tx = self.selected()
        if printing is None or tx is None:
            return
        [tx] = self.as_now([tx])  # a copy of a sale refunded since: refused below
        if tx.status is not spec.TxStatus.COMPLETED or tx.type is not spec.TxType.CHARGE:
            self.notify(t("history.print_not_charge", tx=tx.id), severity="warning", markup=False)
            return
        self.run_worker(lambda: printing.reprint(tx), thread=True, exit_on_error=False)
        self.notify(t("history.printing", tx=tx.id), markup=False)

    def action_day(self, step: int) -> None:
        base = self.day or self.ctx.today()
        self.day = base + timedelta(days=step) if self.day else base
        self.reload()

    def action_find(self) -> None:
        """Show the find box: the rows loaded so far are filtered as the owner types."""
        box = self.query_one("#find", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#find")
    def _find_changed(self, event: Input.Changed) -> None:
        self.find = event.value
        table: DataTable[str] = self.query_one(DataTable)
        table.clear()
        for tx in self.rows.values():
            if matches(tx, self.find):
                table.add_row(*self.cells(tx), key=tx.id)
        if self.last_page is not None:
            self.show_state(self.last_page)
        self.show_selected()

    @on(Input.Submitted, "#find")
    def _find_entered(self) -> None:
        self.query_one(DataTable).focus()

    def action_all_days(self) -> None:
        self.day = None
        self.reload()

    def action_refresh(self) -> None:
        self.reload()

    def action_back(self) -> None:
        """Esc: leave the find box (clearing it) if it is in use, else the history."""
        box = self.query_one("#find", Input)
        if box.display:
            box.value = ""
            box.display = False
            self.query_one(DataTable).focus()
            return
        self.dismiss(None)
