"""Every kiosk screen at 80×24 in Mongolian and English, as SVG snapshots
(regenerate: pytest --snapshot-update, then look at every SVG that changed).

Deterministic: a fixed clock, no camera, no network (the app starts unpaired and each
test puts the screen it shows on top).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from kiosk_harness import fixed_clock

from qrpos.config import Config
from qrpos.ledger import IntentState, SaleResult
from qrpos.service import parse_transaction
from qrpos.tui.app import KioskApp
from qrpos.tui.screens.abandon import AbandonDialog
from qrpos.tui.screens.amount import AmountScreen
from qrpos.tui.screens.charging import ChargingScreen
from qrpos.tui.screens.lock import LockScreen
from qrpos.tui.screens.pairing import PairingScreen
from qrpos.tui.screens.present import PresentCardScreen
from qrpos.tui.screens.recovery import RecoveryScreen
from qrpos.tui.screens.result import ResultScreen
from qrpos.tui.services import KioskServices

SIZE = (80, 24)
TX = parse_transaction(
    {
        "id": "tx_7Hq2ZkP4mN8bV1cX",
        "amountMNT": 12500,
        "status": "COMPLETED",
        "type": "CHARGE",
        "vatReceiptID": "",
        "vatStatus": "pending",
        "terminalID": "ter_demo0001",
        "createdAt": "2025-03-14T04:05:01.250000Z",
    }
)


def _result(state: IntentState, **kw: Any) -> SaleResult:
    base: dict[str, Any] = {
        "intent_id": 1,
        "state": state,
        "amount_mnt": 12_500,
        "transaction": None,
        "decline_code": None,
        "message": None,
        "charged": None,
    }
    base.update(kw)
    return SaleResult(**base)


def _app(tmp_path: Path, language: str = "en") -> KioskApp:
    services = KioskServices(
        config=Config(state_dir=tmp_path, language=language, username="term_demo0001"),
        clock=fixed_clock,
    )
    app = KioskApp(services, live_preview=False, result_linger_s=0)
    app.status = replace(app.status, username="term_demo0001")
    return app


async def _unpaired_start_done(pilot: Any) -> None:
    """The app starts unpaired: wait for its pairing screen before putting another up."""
    while not isinstance(pilot.app.screen, PairingScreen):
        await pilot.pause()


def _showing(make: Callable[[KioskApp], Any]) -> Callable[[Any], Awaitable[None]]:
    async def run_before(pilot: Any) -> None:
        app: KioskApp = pilot.app
        await _unpaired_start_done(pilot)
        screen = make(app)
        app.show_screen(screen)
        await pilot.pause()

    return run_before


SCREENS: dict[str, Callable[[KioskApp], Any]] = {
    "amount": lambda app: AmountScreen(),
    "amount_quick_prices": lambda app: _priced(app),
    "present_card": lambda app: PresentCardScreen(12_500, timeout_s=3600),
    "charging_unclear": lambda app: _unclear(),
    "result_approved": lambda app: ResultScreen(
        _result(IntentState.APPROVED, transaction=TX, charged=True), linger_s=0
    ),
    "result_declined": lambda app: ResultScreen(
        _result(IntentState.DECLINED, decline_code="insufficient_funds"),
        linger_s=0,
    ),
    "result_declined_unknown_code": lambda app: ResultScreen(
        _result(IntentState.DECLINED, decline_code="velocity_[red]x[/]"),
        linger_s=0,
    ),
    "result_token_used": lambda app: ResultScreen(_result(IntentState.TOKEN_USED), linger_s=0),
    "result_abandoned": lambda app: ResultScreen(_result(IntentState.ABANDONED), linger_s=0),
    "result_needs_review": lambda app: ResultScreen(
        _result(IntentState.NEEDS_REVIEW, message="matches this sale and an abandoned one"),
        linger_s=0,
    ),
    "result_not_charged": lambda app: ResultScreen(_result(IntentState.NOT_CHARGED), linger_s=0),
    "present_card_refused": lambda app: _refused(),
    "present_card_held": lambda app: _held(),
    "lock": lambda app: LockScreen(),
    "pairing": lambda app: PairingScreen(first=True, pin_known=False, username="term_demo0001"),
    "recovery": lambda app: RecoveryScreen(),
}


def _priced(app: KioskApp) -> AmountScreen:
    """All nine quick prices set up (the longest list) and a last amount to repeat."""
    labels = ["Set A", "Set B", "Buuz", "Khuushuur", "Tsuivan", "Soup", "Tea", "Salad", ""]
    for slot, label in enumerate(labels, start=1):
        app.services.quick_prices.set(slot, 1500 * slot + 500, label)
    app.sale.last_amount = 12_500
    return AmountScreen()


def _refused() -> PresentCardScreen:
    screen = PresentCardScreen(12_500, timeout_s=3600)
    screen.call_after_refresh(
        screen.show_refusal, "url", "This QR code is a web link, not a wallet pass."
    )
    return screen


def _held() -> PresentCardScreen:
    screen = PresentCardScreen(12_500, timeout_s=3600)
    screen.call_after_refresh(screen.show_refusal, "held", "in view before the last sale")
    return screen


def _unclear() -> ChargingScreen:
    screen = ChargingScreen(12_500, abandon_after_s=0, monotonic=lambda: 100.0)
    screen.unclear = True
    return screen


#: the languages every screen is kept in
LANGUAGES = ["mn", "en"]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", sorted(SCREENS))
def test_screen_snapshot(name: str, language: str, snap_compare: Any, tmp_path: Path) -> None:
    press = ["1", "2", "5", "0", "0"] if name.startswith("amount") else []
    app = _app(tmp_path, language)
    assert snap_compare(app, terminal_size=SIZE, run_before=_showing(SCREENS[name]), press=press)


def test_abandon_dialog_snapshot(snap_compare: Any, tmp_path: Path) -> None:
    async def run_before(pilot: Any) -> None:
        app: KioskApp = pilot.app
        await _unpaired_start_done(pilot)
        app.show_screen(_unclear())
        await pilot.pause()
        app.push_screen(AbandonDialog())
        await pilot.pause()

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_every_stored_snapshot_is_one_a_test_here_takes() -> None:
    """A screen dropped leaves no SVG behind: syrupy fails a run on a snapshot no test
    takes, but not under pytest-xdist (each worker sees part of the run), so this checks
    it whatever runs the suite."""
    folder = Path(__file__).parent / "__snapshots__" / Path(__file__).stem
    stored = {svg.name.removesuffix(".svg") for svg in folder.glob("*.svg")}
    taken = {
        f"test_screen_snapshot[{name}-{language}]" for name in SCREENS for language in LANGUAGES
    }
    assert stored == taken | {"test_abandon_dialog_snapshot"}
