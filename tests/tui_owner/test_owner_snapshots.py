"""Every owner screen at 80×24 in Mongolian and English, as SVG snapshots (regenerate:
pytest --snapshot-update, then look at every SVG that changed).

Deterministic: the kiosk's clock is fixed, the sandbox's history is seeded at fixed times
with ids and receipt numbers from a counter, and the VAT follow-up does not poll.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from owner_harness import NOW, OwnerHost
from textual.widgets import DataTable, Input

from pilot_wait import until
from qrpos import spec
from qrpos.ledger.shifts import add_cashier
from qrpos.manager_pin import pin_record
from qrpos.present.i18n import set_language
from qrpos.simulator import Sandbox, TerminalCredentials, model
from qrpos.tui.screens.owner.cashiers import CashiersScreen
from qrpos.tui.screens.owner.endofday import EndOfDayScreen, ExportDialog
from qrpos.tui.screens.owner.pin import PinDialog
from qrpos.tui.screens.owner.prices import PricesScreen
from qrpos.tui.screens.owner.reversal import ReversalScreen
from qrpos.tui.screens.owner.reviews import ReviewsScreen
from qrpos.tui.screens.owner.shift import ShiftScreen
from qrpos.tui.services import KioskServices

SIZE = (80, 24)


@pytest.fixture
def seeded(
    monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox, terminal: TerminalCredentials
) -> Iterator[None]:
    """A morning's history with ids and receipt numbers that are the same every run."""
    numbers = itertools.count(1)
    monkeypatch.setattr(model, "new_tx_id", lambda: f"tx_{next(numbers):024x}")
    monkeypatch.setattr(model, "new_receipt_number", lambda: f"{next(numbers):033d}")
    for hours, amount in ((5, 1_234_500), (3, 12_000), (1, 4_500)):
        sandbox.seed_charge(
            terminal.username, amount, NOW - timedelta(hours=hours), vat_status=None
        )
    sandbox.seed_charge(
        terminal.username, 800, NOW - timedelta(hours=2), status=spec.TxStatus.REVERSED
    )
    sandbox.seed_charge(
        terminal.username,
        6_000,
        NOW - timedelta(minutes=20),
        vat_status=spec.VatStatus.PENDING,
    )
    yield


async def _menu(pilot: Any) -> None:
    await pilot.pause()


async def _history(pilot: Any) -> None:
    await pilot.press("1")
    table: DataTable[str] = pilot.app.screen.query_one(DataTable)
    await until(pilot, lambda: table.row_count == 5)
    await pilot.pause(0.1)


async def _reversal(pilot: Any) -> None:
    await _history(pilot)
    await pilot.press("r")
    await until(pilot, lambda: isinstance(pilot.app.screen, ReversalScreen))


async def _end_of_day(pilot: Any) -> None:
    await pilot.press("3")
    await until(pilot, lambda: isinstance(pilot.app.screen, EndOfDayScreen))
    screen = pilot.app.screen
    await until(pilot, lambda: screen.eod is not None)
    await pilot.pause(0.1)


async def _export(pilot: Any) -> None:
    services: KioskServices = pilot.app.services
    # a fixed folder: the suggestion is the owner's export folder and the day's file
    services.config = dataclasses.replace(services.config, export_dir=Path("/media/usb"))
    await _end_of_day(pilot)
    await pilot.press("e")
    await until(pilot, lambda: isinstance(pilot.app.screen, ExportDialog))
    await pilot.pause(0.1)


async def _reviews(pilot: Any) -> None:
    await pilot.press("4")
    await until(pilot, lambda: isinstance(pilot.app.screen, ReviewsScreen))
    await pilot.pause(0.3)


async def _prices(pilot: Any) -> None:
    services: KioskServices = pilot.app.services
    services.quick_prices.set(1, 4_500, "Set A")
    services.quick_prices.set(2, 6_000, "Set B")
    services.quick_prices.set(5, 1_500, "Tea")
    await pilot.press("5")
    await until(pilot, lambda: isinstance(pilot.app.screen, PricesScreen))
    await pilot.press("2")
    await pilot.pause()


async def _pin_dialog(pilot: Any) -> None:
    services: KioskServices = pilot.app.services
    services.config = dataclasses.replace(services.config, owner_pin_screens=frozenset({"history"}))
    await pilot.press("1")
    await until(pilot, lambda: isinstance(pilot.app.screen, PinDialog))
    await pilot.press(*"0000", "enter")
    await until(pilot, lambda: bool(pilot.app.screen.outcome))


def _cashiers(pilot: Any) -> None:
    ledger = pilot.app.services.desk.ledger
    for name, pin in (("Bat-Erdene", "1357"), ("Saraa", "2468")):
        add_cashier(ledger, name, pin_record(pin, cashier=True), at=NOW)


async def _shift_start(pilot: Any) -> None:
    _cashiers(pilot)
    await pilot.press("6")
    await until(pilot, lambda: isinstance(pilot.app.screen, ShiftScreen))
    await pilot.pause(0.2)


async def _shift_pin(pilot: Any) -> None:
    await _shift_start(pilot)
    await pilot.press("1")
    await until(pilot, lambda: isinstance(pilot.app.screen, PinDialog))
    await pilot.pause(0.1)


async def _shift_x(pilot: Any) -> None:
    await _shift_pin(pilot)
    await pilot.press(*"1357", "enter")
    await until(pilot, lambda: isinstance(pilot.app.screen, ShiftScreen))
    screen = pilot.app.screen
    await until(pilot, lambda: screen.shift is not None)
    # the X is drawn by a worker: waited for, not guessed at (on a busy machine a 0.3 s
    # pause left it running, and it drew the X over the Z that _shift_z then took)
    await until(pilot, lambda: all(w.is_finished for w in pilot.app.workers if w.node is screen))
    await pilot.pause(0.3)


async def _shift_z(pilot: Any) -> None:
    await _shift_x(pilot)
    await pilot.press("z")
    await until(pilot, lambda: isinstance(pilot.app.screen, PinDialog))
    await pilot.press(*"1357", "enter")
    # the PIN dialog is still on top while its scrypt runs (seconds on a busy machine): the
    # screen is taken once the shift is back, not at the keypress (a CI run took the dialog)
    await until(pilot, lambda: isinstance(pilot.app.screen, ShiftScreen))
    screen = pilot.app.screen
    assert isinstance(screen, ShiftScreen)
    await until(pilot, lambda: screen.z_report is not None)
    await pilot.pause(0.3)


async def _cashiers_screen(pilot: Any) -> None:
    await _shift_start(pilot)
    await pilot.press("c")
    await until(pilot, lambda: isinstance(pilot.app.screen, CashiersScreen))
    screen = pilot.app.screen
    await until(pilot, lambda: bool(screen.names))
    await pilot.press(*"Tuya", "tab", *"9753", "tab", "tab", *"0000", "enter")
    await until(pilot, lambda: bool(screen.outcome))
    await pilot.pause(0.1)


SCREENS: dict[str, Callable[[Any], Awaitable[None]]] = {
    "menu": _menu,
    "history": _history,
    "reversal": _reversal,
    "end_of_day": _end_of_day,
    "export": _export,
    "reviews": _reviews,
    "prices": _prices,
    "pin_dialog": _pin_dialog,
    "shift_start": _shift_start,
    "shift_pin": _shift_pin,
    "shift_x": _shift_x,
    "shift_z": _shift_z,
    "cashiers": _cashiers_screen,
}


#: the languages every screen is kept in
LANGUAGES = ["mn", "en"]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", sorted(SCREENS))
def test_owner_screen_snapshot(
    name: str,
    language: str,
    seeded: None,
    services: KioskServices,
    snap_compare: Any,
) -> None:
    set_language(language)
    app = OwnerHost(services, first_poll_s=3600)

    async def showing(pilot: Any) -> None:
        await SCREENS[name](pilot)
        # a field's cursor blinks every 0.5 s: shown steadily, the picture does not depend
        # on how long the screen took to get here (a PIN's scrypt on a busy machine)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=showing)


def test_every_stored_snapshot_is_one_a_test_here_takes() -> None:
    """A screen dropped leaves no SVG behind: syrupy fails a run on a snapshot no test
    takes, but not under pytest-xdist (each worker sees part of the run), so this checks
    it whatever runs the suite."""
    folder = Path(__file__).parent / "__snapshots__" / Path(__file__).stem
    stored = {svg.name.removesuffix(".svg") for svg in folder.glob("*.svg")}
    taken = {
        f"test_owner_screen_snapshot[{name}-{language}]"
        for name in SCREENS
        for language in LANGUAGES
    }
    assert stored == taken
