"""The customer display through the real kiosk: every sale's states reach it in order
(never "paid" for a sale that was not), a display unplugged mid-queue holds up no sale
and the status bar says so once, the demo shows the customer's view in a panel that
leaves the cashier's screen whole at 80×24, and the demo honours the configured
handheld scanner and customer display as `qrpos run` does."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator
from pathlib import Path

from kiosk_harness import FAST, Kiosk, make_services
from textual.widgets import Static

from qrpos.config import Config
from qrpos.kiosk.demo import demo_world
from qrpos.peripherals.display_port import CustomerDisplay, MemorySink
from qrpos.present.customer import CustomerView
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp
from qrpos.tui.messages import TokenScanned
from qrpos.tui.sale import SaleState
from qrpos.tui.widgets.demo_panel import DemoPanel, panel_text
from qrpos.tui.widgets.status_bar import status_line


@contextlib.asynccontextmanager
async def kiosk_with_display(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> AsyncIterator[tuple[Kiosk, MemorySink, CustomerDisplay]]:
    services, ledger = make_services(tmp_path, live_url, terminal)
    sink = MemorySink("test display")
    display = CustomerDisplay(sink, retry_s=0.02, shop="Canteen")
    display.start()
    services.customer_display = display
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            yield Kiosk(app, pilot, services, sandbox, terminal, ledger), sink, display
    finally:
        display.stop(farewell=False)
        ledger.close()


async def sell(kiosk: Kiosk, amount: str, token: str) -> None:
    await kiosk.key_amount(amount)
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(token))
    await kiosk.on_screen("ResultScreen")


def kinds(views: list[CustomerView]) -> list[tuple[str, int | None]]:
    """The views shown, repeats of one state (the checking seconds) folded."""
    out: list[tuple[str, int | None]] = []
    for view in views:
        step = (view.kind, view.amount_mnt)
        if not out or out[-1] != step:
            out.append(step)
    return out


async def test_every_state_of_a_sale_reaches_the_customer_in_order(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    rich = sandbox.create_wallet(100_000)
    poor = sandbox.create_wallet(1_000)
    async with kiosk_with_display(tmp_path, live_url, sandbox, terminal) as (kiosk, sink, _display):
        await kiosk.on_screen("AmountScreen")
        await kiosk.until(lambda: bool(sink.views) and sink.views[-1].kind == "idle")
        assert sink.views[-1].headline == "Canteen"
        await sell(kiosk, "4500", rich.qr_token)
        await kiosk.until(lambda: sink.views[-1].kind == "paid")
        await kiosk.pilot.press("x")
        await sell(kiosk, "4500", poor.qr_token)
        assert kiosk.text("#headline") == "DECLINED"
        await kiosk.until(lambda: sink.views[-1].kind == "not_paid")
        assert sink.views[-1].reason == "no_money"
        assert kinds(sink.views) == [
            ("idle", None),
            ("pay", 4500),
            ("checking", 4500),
            ("paid", 4500),
            ("idle", None),
            ("pay", 4500),
            ("checking", 4500),
            ("not_paid", 4500),
        ]


async def test_an_unplugged_display_holds_up_no_sale_and_is_said_once(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    wallets = [sandbox.create_wallet(100_000) for _ in range(4)]
    async with kiosk_with_display(tmp_path, live_url, sandbox, terminal) as (kiosk, sink, _display):
        await sell(kiosk, "1000", wallets[0].qr_token)
        sink.unplugged = True  # the cable pulled in the middle of the lunch queue
        for amount, wallet in zip(("2000", "3000"), wallets[1:3], strict=True):
            await kiosk.pilot.press("x")
            await sell(kiosk, amount, wallet.qr_token)
            assert kiosk.text("#headline") == "APPROVED"
        await kiosk.until(lambda: kiosk.app.status.display)
        assert "check display" in status_line(kiosk.app.status, 80).plain
        said = [n.message for n in kiosk.app._notifications if "Customer display" in n.message]
        assert len(said) == 1, said  # once, not for every view it missed
        sink.unplugged = False
        await kiosk.until(lambda: not kiosk.app.status.display)
        await kiosk.until(lambda: sink.views[-1].kind == "paid")
        assert sink.views[-1].amount_mnt == 3000  # the newest, not one it missed
        await kiosk.pilot.press("x")
        await sell(kiosk, "4000", wallets[3].qr_token)
        await kiosk.until(lambda: sink.views[-1].amount_mnt == 4000)


async def test_the_demo_panel_leaves_the_cashiers_screen_whole_at_80x24(tmp_path: Path) -> None:
    with demo_world(state_dir=tmp_path, language="en", camera_fps=30.0, printer=True,
                    peripherals=True) as world:  # fmt: skip
        assert world.services.customer_display is None  # none configured: the panel only
        app = KioskApp(world.services, **FAST)  # type: ignore[arg-type]
        async with app.run_test(size=(80, 24)) as pilot:
            kiosk = Kiosk(app, pilot, world.services, world.sandbox, None, None)  # type: ignore[arg-type]
            await kiosk.key_amount("12500")
            await kiosk.on_screen("PresentCardScreen")
            await pilot.press("p")
            await kiosk.on_screen("ResultScreen")
            await kiosk.until(lambda: bool(app.demo_extras.slip))
            await pilot.pause()
            panel = app.screen.query_one(DemoPanel)
            assert not panel.display and not app._notifications  # nothing over the screen
            hint = app.screen.query_one("#hint", Static)
            assert hint.region.width == 80 and app.screen.query_one("#amount").region.width >= 76
            assert any("shows the phone" in n for n in app.demo_extras.notices)
            assert "PAID        12,500 ₮" in panel_text(app.demo_extras).plain
            await pilot.press("c")  # asked for (it ends the result, as any key does)
            await kiosk.until(lambda: app.demo_extras.shown)
            await kiosk.on_screen("AmountScreen")
            await pilot.pause()
            panel = app.screen.query_one(DemoPanel)
            assert panel.display and panel.region.width > 0
            shown = str(panel.render())
            assert "Virtual printer" in shown and "12,500" in shown


async def test_the_demo_panel_shows_itself_beside_a_whole_screen_when_there_is_room(
    tmp_path: Path,
) -> None:
    with demo_world(state_dir=tmp_path, language="mn", peripherals=True) as world:
        app = KioskApp(world.services, **FAST)  # type: ignore[arg-type]
        async with app.run_test(size=(120, 30)) as pilot:
            kiosk = Kiosk(app, pilot, world.services, world.sandbox, None, None)  # type: ignore[arg-type]
            await kiosk.on_screen("AmountScreen")
            await kiosk.until(lambda: app.demo_extras.shown)
            await pilot.pause()
            assert app.screen.query_one("#hint", Static).region.width >= 80
            shown = str(app.screen.query_one(DemoPanel).render())
            assert "QR кодоор төлнө" in shown


async def test_the_demo_honours_the_configured_handheld_scanner_and_display(
    tmp_path: Path,
) -> None:
    from virtual_pole_link import pole_pair

    master, slave = os.openpty()
    with pole_pair(tmp_path) as pole:
        base = Config(
            scanner={"handheld": f"serial:{os.ttyname(slave)}@115200"},
            customer_display={"device": f"vfd:{pole.path}@9600", "protocol": "cd5220"},
        )
        base = dataclasses.replace(base, state_dir=tmp_path)
        try:
            with demo_world(state_dir=tmp_path, language="en", base=base,
                            peripherals=True) as world:  # fmt: skip
                assert world.services.customer_display is not None
                app = KioskApp(world.services, **FAST)  # type: ignore[arg-type]
                async with app.run_test(size=(80, 24)) as pilot:
                    kiosk = Kiosk(app, pilot, world.services, world.sandbox, None, None)  # type: ignore[arg-type]
                    token = world.sandbox.wallet(world.wallet_ids[0]).qr_token
                    await kiosk.key_amount("7500")
                    await kiosk.on_screen("PresentCardScreen")
                    os.write(master, token.encode() + b"\r\n")  # the handheld scanner
                    await kiosk.until(lambda: app.sale.state is SaleState.RESULT, timeout=15)
                    await kiosk.on_screen("ResultScreen")
                    assert kiosk.text("#headline") == "APPROVED"
                    await kiosk.until(lambda: b"PAID" in pole.received)
        finally:
            os.close(master)
            os.close(slave)
