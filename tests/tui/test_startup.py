"""Start-up with a `ServicesStarter`: the real Amount screen is drawn (and READY=1 sent)
before the services exist; no sale is sent before they are in and the start-up
recovery is done; a starter that fails stops the kiosk with its message."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kiosk_harness import FAST, Kiosk, fixed_clock, make_services

from qrpos.config import Config, ConfigError
from qrpos.kiosk.starter import ContextStarter
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.tui.app import KioskApp
from qrpos.tui.sale import SaleState
from qrpos.tui.services import KioskServices


class GatedWorld:
    """A starter factory whose services appear only when the test opens the gate."""

    def __init__(self, tmp_path: Path, live_url: str, terminal: TerminalCredentials) -> None:
        self.tmp_path = tmp_path
        self.live_url = live_url
        self.terminal = terminal
        self.gate = threading.Event()
        self.steps: list[str] = []
        self.ledger: Ledger | None = None
        self.closed = False

    @contextlib.contextmanager
    def __call__(self, on_step: Callable[[str], None]) -> Iterator[KioskServices]:
        on_step("outbox")
        self.steps.append("outbox")
        assert self.gate.wait(10), "the test never opened the gate"
        services, self.ledger = make_services(self.tmp_path, self.live_url, self.terminal)
        try:
            yield services
        finally:
            self.ledger.close()
            self.closed = True


def _first_screen(tmp_path: Path) -> KioskServices:
    return KioskServices(
        config=Config(state_dir=tmp_path, language="en", username="term_starting"),
        clock=fixed_clock,
    )


def sale_state(app: KioskApp) -> SaleState:
    """The sale's state now (read anew: it moves while the test waits)."""
    return app.sale.state


async def test_amount_screen_comes_first_and_enter_waits_until_services_and_recovery(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notify_path = str(tmp_path / "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(notify_path)
    listener.settimeout(5)
    monkeypatch.setenv("NOTIFY_SOCKET", notify_path)
    world = GatedWorld(tmp_path, live_url, terminal)
    starter = ContextStarter(world)
    app = KioskApp(_first_screen(tmp_path), starter=starter, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        kiosk = Kiosk(app, pilot, app.services, sandbox, terminal, None)  # type: ignore[arg-type]
        await kiosk.on_screen("AmountScreen")
        # READY=1 went out with the first screen, while the services are still starting
        assert "READY=1" in listener.recv(4096).decode()
        await kiosk.until(lambda: world.steps == ["outbox"])
        await kiosk.until(lambda: "start: payment store" in kiosk.text("#status"))
        assert not app.services_ready and app.sale.state is SaleState.STARTING
        await pilot.press("2", "5", "0", "0", "enter")
        await kiosk.until(lambda: "Starting up" in kiosk.text("#notice"))
        assert app.screen.amount == 2500  # type: ignore[attr-defined]
        await pilot.press("o")  # the owner menu waits for the services too
        assert type(app.screen).__name__ == "AmountScreen"
        assert sandbox.transactions() == []
        world.gate.set()
        # services in, recovery done: the waiting sale goes on by itself
        await kiosk.on_screen("PresentCardScreen")
        assert app.sale.amount == 2500
        assert app.services.desk is not None and app.status.starting is None
        assert "start:" not in kiosk.text("#status")
        assert terminal.username in kiosk.text("#status")
    starter.close()
    listener.close()
    assert world.closed


async def test_open_sale_found_at_start_shows_recovery_after_the_first_screen(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    client = TerminalClient(live_url, terminal.username, terminal.password, timeout_s=5.0)
    desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing(max_sends=1))
    sandbox.arm_fault("drop_after_commit", operation="charge")
    sandbox.arm_fault("error_before_commit", count=10_000, operation="list")
    assert (await desk.charge(4000, wallet.qr_token, deadline_s=0.5)).is_open
    await client.aclose()
    ledger.close()
    sandbox.arm_fault("drop_after_commit", count=10_000, operation="charge")
    world = GatedWorld(tmp_path, live_url, terminal)
    world.gate.set()
    starter = ContextStarter(world)
    app = KioskApp(_first_screen(tmp_path), starter=starter, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        kiosk = Kiosk(app, pilot, app.services, sandbox, terminal, None)  # type: ignore[arg-type]
        await kiosk.on_screen("RecoveryScreen")
        assert sale_state(app) is SaleState.RECOVERING
        sandbox.clear_faults()
        await kiosk.on_screen("AmountScreen")
        assert sale_state(app) is SaleState.READY
        assert len(sandbox.transactions()) == 1  # the lost sale, charged once, no more
    starter.close()


async def test_a_starter_that_fails_stops_the_kiosk_with_its_message(tmp_path: Path) -> None:
    @contextlib.contextmanager
    def broken(on_step: Callable[[str], None]) -> Iterator[KioskServices]:
        on_step("service")
        raise ConfigError("no service base URL: set QRPOS_BASE_URL")
        yield  # type: ignore[unreachable]  # a generator that raises before its first yield

    starter = ContextStarter(broken)
    app = KioskApp(_first_screen(tmp_path), starter=starter, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            if app.startup_error is not None:
                break
            await pilot.pause(0.02)
    assert isinstance(app.startup_error, ConfigError)
    assert "QRPOS_BASE_URL" in str(app.startup_error)
    starter.close()
