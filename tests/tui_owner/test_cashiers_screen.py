"""The cashiers screen through its keys: add a cashier with a PIN, give a new PIN, rename,
remove, each behind the manager PIN; a PIN never on screen."""

from __future__ import annotations

from collections.abc import Callable

from owner_harness import PIN, OwnerHost

from pilot_wait import until
from qrpos.ledger.shifts import cashiers, find_cashier
from qrpos.manager_pin import record_matches
from qrpos.tui.screens.owner.cashiers import CashiersScreen
from qrpos.tui.services import KioskServices


async def test_the_owner_adds_re_pins_renames_and_removes_a_cashier(
    host: Callable[..., OwnerHost], services: KioskServices
) -> None:
    assert services.desk is not None
    ledger = services.desk.ledger
    app = host(first_poll_s=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6", "c")
        await until(pilot, lambda: isinstance(app.screen, CashiersScreen))
        screen = app.screen
        assert isinstance(screen, CashiersScreen)

        async def form(*keys: str) -> str:
            screen.outcome = None
            await pilot.press(*keys)
            await until(pilot, lambda: bool(screen.outcome) and not screen.busy)
            return screen.outcome or ""

        said = await form(*"Tuya", "tab", *"9753", "tab", "tab", *PIN, "enter")
        assert said == "Tuya added", said
        [tuya] = cashiers(ledger)
        assert record_matches(tuya.pin_record, "9753")
        said = await form(*"tuya", "tab", *"1122", "tab", "tab", *PIN, "enter")
        assert "PIN changed" in said
        assert record_matches(find_cashier(ledger, "Tuya").pin_record, "1122")
        said = await form(*"Tuya", "tab", "tab", *"Tuya B.", "tab", *PIN, "enter")
        assert said == "Tuya is now Tuya B."
        said = await form(*"Tuya B.", "tab", "tab", "tab", *"0000", "enter")
        assert "Wrong PIN" in said and cashiers(ledger)  # nothing removed
        # the form keeps what was typed; the manager PIN field waits for the right PIN
        said = await form(*PIN, "enter")
        assert "removed" in said and cashiers(ledger) == []
        said = await form(*"Nobody", "tab", "tab", "tab", *PIN, "enter")
        assert "no cashier called Nobody" in said
        shown = " ".join(str(w.render()) for w in screen.query("Static"))
        assert "9753" not in shown and "1122" not in shown
