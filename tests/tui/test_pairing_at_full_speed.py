"""Pairing typed at full speed: username, Tab, password, Tab, PIN, Enter, every key
queued before the form has drawn a single change. No Tab is lost: each field gets
exactly what was typed into it, and the kiosk pairs."""

from __future__ import annotations

from pathlib import Path

from kiosk_harness import FAST, Kiosk, make_services
from test_full_speed_queue import burst

from qrpos import manager_pin
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp


async def test_a_pairing_typed_at_full_speed_loses_no_tab(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    services, ledger = make_services(tmp_path, live_url, terminal, paired=False)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
        await kiosk.on_screen("PairingScreen")
        keys = [*terminal.username, "tab", *terminal.password, "tab", *"2580", "enter"]
        burst(kiosk, keys)
        await kiosk.on_screen("AmountScreen")
        assert services.paired
        assert manager_pin.verify_pin(tmp_path, "2580")
    ledger.close()


async def test_typing_before_the_form_is_up_lands_in_the_first_field(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    """Keys typed while the pairing screen is still being put up go to its first field,
    in order, with the Tabs that follow them."""
    services, ledger = make_services(tmp_path, live_url, terminal, paired=False)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
        keys = [*terminal.username, "tab", *terminal.password, "tab", *"2580", "enter"]
        burst(kiosk, keys)
        await kiosk.on_screen("AmountScreen")
        assert services.paired
    ledger.close()
