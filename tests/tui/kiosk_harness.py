"""The kiosk under Pilot, wired to the real sandbox over loopback and a real outbox file."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from textual.css.query import NoMatches
from textual.message import Message
from textual.pilot import Pilot

from qrpos.config import Config
from qrpos.kiosk.demo import DemoWorld, demo_world
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp
from qrpos.tui.services import KioskServices

FIXED_NOW = datetime(2025, 3, 14, 4, 5, 6, tzinfo=UTC)  # 12:05:06 in Ulaanbaatar


def fixed_clock() -> datetime:
    return FIXED_NOW


#: short timings so every path runs in well under a second
FAST = {
    "present_timeout_s": 30.0,
    "charge_deadline_s": 2.0,
    "resolve_every_s": 0.05,
    "abandon_after_s": 0.0,
    "result_linger_s": 0.0,
    "health_every_s": 3600.0,
    "settle_every_s": 3600.0,
    "live_preview": False,
}


@dataclass
class Kiosk:
    """What a test drives and inspects."""

    app: KioskApp
    pilot: Pilot[None]
    services: KioskServices
    sandbox: Sandbox
    terminal: TerminalCredentials
    ledger: Ledger

    async def until(self, predicate: Callable[[], bool], timeout: float = 8.0) -> None:
        """Let the app run until `predicate()` holds (fails the test after `timeout`). A
        widget the predicate reads that is not there yet (a screen pushed, its children
        still being composed) is "not yet", not a failure: CI once read `#notice` on an
        AmountScreen a moment before it was mounted."""
        import time

        def holds() -> bool:
            try:
                return predicate()
            except NoMatches:
                return False

        give_up = time.monotonic() + timeout
        while not holds():
            if time.monotonic() > give_up:
                raise AssertionError(f"timed out; screen is {type(self.app.screen).__name__}")
            await self.pilot.pause(0.02)

    async def on_screen(self, name: str, timeout: float = 8.0) -> None:
        """Wait until the screen on top is `name` and has been composed."""
        await self.until(
            lambda: type(self.app.screen).__name__ == name and self.app.screen.is_mounted,
            timeout,
        )
        await self.pilot.pause()

    async def key_amount(self, amount: str) -> None:
        await self.on_screen("AmountScreen")
        await self.pilot.press(*amount, "enter")

    def text(self, selector: str) -> str:
        """The plain text a widget shows now."""
        widget: Any = self.app.screen.query_one(selector)
        return str(widget.render())


def make_services(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials, *, paired: bool = True
) -> tuple[KioskServices, Ledger]:
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")

    def make_client(username: str, password: str) -> TerminalClient:
        return TerminalClient(live_url, username, password, timeout_s=5.0)

    def open_desk(client: TerminalClient) -> ChargeDesk:
        # the desk keeps the real clock: it matches history rows by their real times
        return ChargeDesk(ledger, client, policy=RetryPolicy.testing())

    client = make_client(terminal.username, terminal.password) if paired else None
    stored: dict[str, str] = {}

    def store_pairing(username: str, password: str) -> str:
        stored[username] = "stored"
        return "test store"

    services = KioskServices(
        config=Config(
            base_url=live_url,
            username=terminal.username if paired else None,
            state_dir=tmp_path,
            language="en",
        ),
        desk=open_desk(client) if client else None,
        client=client,
        clock=fixed_clock,
        make_client=make_client,
        store_pairing=store_pairing,
        open_desk=open_desk,
    )
    return services, ledger


@pytest.fixture
async def kiosk(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> AsyncIterator[Kiosk]:
    services, ledger = make_services(tmp_path, live_url, terminal)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        yield Kiosk(app, pilot, services, sandbox, terminal, ledger)
    ledger.close()


@contextlib.asynccontextmanager
async def demo_kiosk(
    tmp_path: Path, language: str = "en", posted: list[Message] | None = None
) -> AsyncIterator[tuple[Kiosk, DemoWorld]]:
    """The app over the demo world (sandbox, virtual phone, real decoder) under Pilot;
    every message the app handles goes into `posted`."""
    hook = posted.append if posted is not None else None
    with demo_world(state_dir=tmp_path, language=language, camera_fps=30.0) as world:
        app = KioskApp(world.services, **FAST)  # type: ignore[arg-type]
        async with app.run_test(size=(80, 24), message_hook=hook) as pilot:
            yield Kiosk(app, pilot, world.services, world.sandbox, None, None), world  # type: ignore[arg-type]
