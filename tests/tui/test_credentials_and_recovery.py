"""401 locks the kiosk without losing anything; pairing (first start and re-pair);
recovery of open sales before the first sale; the demo phone through the real decoder."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kiosk_harness import FAST, Kiosk, make_services

from qrpos import manager_pin
from qrpos.kiosk.demo import demo_world
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.tui.app import KioskApp
from qrpos.tui.messages import TokenScanned
from qrpos.tui.sale import SaleState


async def _type_pairing(kiosk: Kiosk, username: str, password: str, pin: str) -> None:
    screen = kiosk.app.screen
    for field, value in (("#username", username), ("#password", password), ("#pin", pin)):
        widget = screen.query_one(field)
        widget.value = value  # type: ignore[attr-defined]
    screen.query_one("#pin").focus()
    await kiosk.pilot.press("enter")


async def test_a_401_locks_sales_keeps_the_sale_and_repairing_unlocks(
    kiosk: Kiosk, wallet: WalletInfo
) -> None:
    new_password = kiosk.sandbox.rotate_password(kiosk.terminal.username)
    await kiosk.key_amount("3000")
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(wallet.qr_token))
    await kiosk.on_screen("LockScreen")
    assert "Sales are stopped" in kiosk.text("#detail")
    # no way to a new sale: digits do nothing, the intent is kept
    await kiosk.pilot.press("5", "enter")
    await kiosk.on_screen("PairingScreen")
    [kept] = [v for v in kiosk.services.desk.listing.intents(True) if v.kind == "charge"]  # type: ignore[union-attr]
    assert kept.state == IntentState.CREDENTIALS_REJECTED
    await _type_pairing(kiosk, kiosk.terminal.username, "vpt_" + "x" * 32, "2468")
    await kiosk.until(lambda: "rejected" in kiosk.text("#notice"))
    await _type_pairing(kiosk, kiosk.terminal.username, new_password, "2468")
    await kiosk.on_screen("AmountScreen")
    assert kiosk.app.sale.state is not SaleState.LOCKED
    assert kiosk.services.client is not None
    assert kiosk.sandbox.transactions() == []  # the 401 charged nothing


async def test_first_start_without_credentials_pairs_and_sets_the_manager_pin(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    services, ledger = make_services(tmp_path, live_url, terminal, paired=False)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
        await kiosk.on_screen("PairingScreen")
        await _type_pairing(kiosk, "nope", terminal.password, "1234")
        await kiosk.until(lambda: "not a terminal username" in kiosk.text("#notice"))
        await _type_pairing(kiosk, terminal.username, terminal.password, "12")
        await kiosk.until(lambda: "4 to 12 digits" in kiosk.text("#notice"))
        await _type_pairing(kiosk, terminal.username, terminal.password, "4321")
        await kiosk.on_screen("AmountScreen")
        assert services.paired
        assert manager_pin.verify_pin(tmp_path, "4321")
        assert terminal.password not in str(app.screen.query_one("#notice").render())
    ledger.close()


async def test_open_sales_are_recovered_before_the_first_sale(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    # a previous run lost the reply and crashed: the outbox holds an unresolved sale
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    client = TerminalClient(live_url, terminal.username, terminal.password, timeout_s=5.0)
    desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing(max_sends=1))
    sandbox.arm_fault("drop_after_commit", operation="charge")
    sandbox.arm_fault("error_before_commit", count=10_000, operation="list")
    before = await desk.charge(4000, wallet.qr_token, deadline_s=0.5)
    assert before.is_open
    await client.aclose()
    ledger.close()

    # the service stays unreachable for sales and history until the test says so
    sandbox.arm_fault("drop_after_commit", count=10_000, operation="charge")
    services, ledger = make_services(tmp_path, live_url, terminal)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
        await kiosk.on_screen("RecoveryScreen")
        assert "Settling unfinished payments" in kiosk.text("#headline")
        await asyncio.sleep(0.2)
        assert type(app.screen).__name__ == "RecoveryScreen"  # no sale while it is open
        sandbox.clear_faults()
        await kiosk.on_screen("AmountScreen")
        [view] = [v for v in services.desk.listing.intents(True) if v.kind == "charge"]  # type: ignore[union-attr]
        assert view.charged is True
        assert len(sandbox.transactions()) == 1
    ledger.close()


async def test_demo_phone_is_read_by_the_real_decoder_and_approved(tmp_path: Path) -> None:
    with demo_world(state_dir=tmp_path, language="en", camera_fps=30.0) as world:
        app = KioskApp(world.services, **FAST)  # type: ignore[arg-type]
        async with app.run_test(size=(80, 24)) as pilot:
            kiosk = Kiosk(app, pilot, world.services, world.sandbox, None, None)  # type: ignore[arg-type]
            await kiosk.key_amount("12500")
            await kiosk.on_screen("PresentCardScreen")
            await pilot.press("p")
            await kiosk.on_screen("ResultScreen", timeout=15)
            assert app.screen.view.kind == "approved"  # type: ignore[attr-defined]
            first = world.sandbox.wallet(world.wallet_ids[0])
            assert first.balance_mnt == 250_000 - 12_500
