"""The owner's history screen: lazy paging, newest first, local time, offline cache."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from owner_harness import NOW, OwnerHost, row_ids
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.screens.owner.history import HistoryScreen
from qrpos.tui.services import KioskServices


def seed_day(sandbox: Sandbox, username: str, n: int) -> list[str]:
    """n charges an hour apart before NOW, oldest first."""
    return [
        sandbox.seed_charge(username, 1_000 * (i + 1), NOW - timedelta(hours=n - i))
        for i in range(n)
    ]


async def wait_rows(pilot: Pilot[None], table: DataTable[str], count: int) -> None:
    for _ in range(100):
        await pilot.pause(0.02)
        if table.row_count >= count:
            return
    raise AssertionError(f"table has {table.row_count} rows, expected {count}")


async def test_history_pages_lazily_newest_first_in_local_time(
    host: Callable[..., OwnerHost], sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    ids = seed_day(sandbox, terminal.username, 7)
    app = host(history_page_size=3)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("1")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table: DataTable[str] = screen.query_one(DataTable)
        await wait_rows(pilot, table, 3)
        await pilot.pause(0.1)
        assert table.row_count == 3  # only the first page until the owner scrolls
        first = table.get_row_at(0)
        assert row_ids(table)[0] == ids[-1]
        assert first[4] == "…" + ids[-1][-12:]  # the id's tail; the line below says it whole
        assert first[0] == "05-02 10:00:00"  # 02:00Z shown as 10:00 local
        assert first[1] == "7,000 ₮"
        for _ in range(3):
            await pilot.press("down")
        await wait_rows(pilot, table, 6)
        for _ in range(3):
            await pilot.press("down")
        await wait_rows(pilot, table, 7)
        shown = row_ids(table)
        assert shown == list(reversed(ids))
        assert "End of the history" in str(screen.query_one("#more", Static).render())


async def test_last_known_history_is_shown_offline_and_marked_so(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> None:
    ids = seed_day(sandbox, terminal.username, 4)
    async with host().run_test(size=(100, 30)) as pilot:
        await pilot.press("1")
        table: DataTable[str] = pilot.app.screen.query_one(DataTable)
        await wait_rows(pilot, table, 4)
        assert "OFFLINE" not in str(pilot.app.screen.query_one("#banner", Static).render())

    dead = TerminalClient("http://127.0.0.1:9", terminal.username, terminal.password, timeout_s=1)
    services.client = dead
    async with host().run_test(size=(100, 30)) as pilot:
        await pilot.press("1")
        screen = pilot.app.screen
        table = screen.query_one(DataTable)
        await wait_rows(pilot, table, 4)
        banner = screen.query_one("#banner", Static)
        assert "OFFLINE: last known history as of 2024-05-02 11:00" in str(banner.render())
        assert banner.has_class("offline")
        assert row_ids(table) == list(reversed(ids))
    await dead.aclose()


async def test_day_filter_shows_only_that_local_day(
    host: Callable[..., OwnerHost], sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    midnight = datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC)
    before = sandbox.seed_charge(terminal.username, 1_500, midnight - timedelta(seconds=1))
    after = sandbox.seed_charge(terminal.username, 2_500, midnight)
    async with host().run_test(size=(100, 30)) as pilot:
        await pilot.press("1")
        table: DataTable[str] = pilot.app.screen.query_one(DataTable)
        await wait_rows(pilot, table, 2)
        await pilot.press("right")  # first press: today (2024-05-02 local)
        await pilot.pause(0.2)
        await wait_rows(pilot, table, 1)
        assert row_ids(table) == [after]
        await pilot.press("left")
        await pilot.pause(0.2)
        await wait_rows(pilot, table, 1)
        assert row_ids(table) == [before]


async def test_the_owner_finds_a_sale_by_amount_time_or_id_tail(
    host: Callable[..., OwnerHost], sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    ids = seed_day(sandbox, terminal.username, 6)  # 1,000 … 6,000, an hour apart
    async with host().run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        screen = pilot.app.screen
        assert isinstance(screen, HistoryScreen)
        table: DataTable[str] = screen.query_one(DataTable)
        await wait_rows(pilot, table, 6)
        await pilot.press("F", *"4,000")
        await pilot.pause(0.1)
        assert row_ids(table) == [ids[3]]
        assert "1 of 6 rows match" in str(screen.query_one("#more", Static).render())
        for _ in range(5):
            await pilot.press("backspace")
        await pilot.press(*ids[1][-5:].upper())
        await pilot.pause(0.1)
        assert row_ids(table) == [ids[1]]
        await pilot.press("escape")  # clears the find box, stays on the history
        await pilot.pause(0.1)
        assert isinstance(pilot.app.screen, HistoryScreen)
        assert row_ids(table) == list(reversed(ids))
        await pilot.press("f", *"08:")  # 00:00Z is 08:00 local
        await pilot.pause(0.1)
        assert [table.get_row_at(i)[0][6:11] for i in range(table.row_count)] == ["08:00"]
        await pilot.press("escape", "escape")
        await pilot.pause(0.1)
        assert not isinstance(pilot.app.screen, HistoryScreen)
