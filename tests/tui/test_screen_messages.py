"""Each kiosk screen's behaviour, read from the messages it posts (`message_hook`): screens
say what the cashier did and never call into the app; the sale's owner answers with
`Sale.Moved`. A bare host app stands in for the kiosk where only the screen matters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kiosk_harness import FAST, Kiosk, demo_kiosk, make_services
from test_snapshots import _app, _result, _unpaired_start_done
from textual.app import App
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Input

import qrpos.tui
from qrpos.ledger import IntentState
from qrpos.present.i18n import set_language
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.tui.app import KioskApp
from qrpos.tui.messages import (
    AbandonAsked,
    NextSale,
    PairingRequested,
    PairingSubmitted,
    PresentCancelled,
    ScanRefusedMessage,
    TokenScanned,
)
from qrpos.tui.sale import Sale, SaleState
from qrpos.tui.screens.amount import AmountScreen
from qrpos.tui.screens.charging import ChargingScreen
from qrpos.tui.screens.lock import LockScreen
from qrpos.tui.screens.pairing import PairingScreen
from qrpos.tui.screens.present import PresentCardScreen
from qrpos.tui.screens.result import ResultScreen
from qrpos.tui.widgets.status_bar import KioskStatus


class Host(App[None]):
    """Shows one screen and records what bubbles up from it (and handles nothing); like
    the kiosk it offers the reactive `status` the status bar watches."""

    CSS_PATH = Path(qrpos.tui.__file__).with_name("app.tcss")
    status: var[KioskStatus] = var(KioskStatus)

    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.first = screen
        self.bells = 0

    def on_mount(self) -> None:
        self.push_screen(self.first)

    def bell(self) -> None:
        self.bells += 1


def _of(posted: list[Message], kind: type[Message]) -> list[Any]:
    seen: dict[int, Message] = {}
    for message in posted:
        if isinstance(message, kind):
            seen[id(message)] = message  # the hook sees a message at every node it passes
    return list(seen.values())


async def _drive(screen: Screen[Any], *keys: str) -> tuple[Host, list[Message]]:
    posted: list[Message] = []
    host = Host(screen)
    async with host.run_test(size=(80, 24), message_hook=posted.append) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
    return host, posted


@pytest.fixture(autouse=True)
def _english() -> Any:
    set_language("en")
    yield
    set_language("mn")


async def test_amount_screen_posts_the_amount_only_when_in_range() -> None:
    _, posted = await _drive(AmountScreen(), "0", "enter", "1", "2", "5", "0", "0", "enter")
    assert [m.amount for m in _of(posted, AmountScreen.AmountEntered)] == [12_500]


async def test_present_screen_posts_cancel_on_escape_and_on_its_timeout() -> None:
    _, posted = await _drive(PresentCardScreen(100, timeout_s=3600), "escape")
    assert [m.timed_out for m in _of(posted, PresentCancelled)] == [False]
    posted = []
    async with Host(PresentCardScreen(100, timeout_s=0.01)).run_test(
        message_hook=posted.append
    ) as pilot:
        while not _of(posted, PresentCancelled):
            await pilot.pause(0.01)
    assert [m.timed_out for m in _of(posted, PresentCancelled)] == [True]


async def test_charging_screen_asks_to_abandon_only_once_unclear() -> None:
    screen = ChargingScreen(100, abandon_after_s=0)
    _, posted = await _drive(screen, "escape")
    assert _of(posted, AbandonAsked) == []
    screen = ChargingScreen(100, abandon_after_s=0)
    screen.unclear = True
    _, posted = await _drive(screen, "escape")
    assert len(_of(posted, AbandonAsked)) == 1


async def test_lock_screen_asks_for_pairing_on_enter() -> None:
    _, posted = await _drive(LockScreen(), "5", "enter")
    assert len(_of(posted, PairingRequested)) == 1


async def test_result_screen_posts_next_sale_once_and_rings_for_a_decline() -> None:
    result = _result(IntentState.DECLINED, decline_code="insufficient_funds")
    host, posted = await _drive(ResultScreen(result, linger_s=0), "x", "y")
    assert len(_of(posted, NextSale)) == 1
    assert host.bells == 1


async def test_needs_review_is_its_own_outcome_without_the_decline_bell() -> None:
    result = _result(IntentState.NEEDS_REVIEW, message="matches this sale and an abandoned one")
    screen = ResultScreen(result, linger_s=0)
    posted: list[Message] = []
    host = Host(screen)
    async with host.run_test(size=(80, 24), message_hook=posted.append) as pilot:
        await pilot.pause()
        detail = str(screen.query_one("#detail").render())
        headline = str(screen.query_one("#headline").render())
        assert screen.has_class("result-review") and not screen.has_class("result-declined")
    assert host.bells == 0
    assert "checked by the owner" in detail and "Do not charge again" in detail
    assert "DECLINED" not in headline + detail
    assert "abandoned one" not in detail  # the ledger's English note stays off the screen


async def test_pairing_screen_posts_the_form_without_showing_the_password() -> None:
    screen = PairingScreen(first=True, pin_known=False, username="term_abcd1234")
    posted: list[Message] = []
    async with Host(screen).run_test(size=(80, 24), message_hook=posted.append) as pilot:
        await pilot.pause()
        screen.query_one("#password", Input).value = "vpt_" + "a" * 32
        screen.query_one("#pin", Input).value = "2468"
        screen.query_one("#pin", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
    [sent] = _of(posted, PairingSubmitted)
    assert (sent.username, sent.pin) == ("term_abcd1234", "2468")
    assert sent.password == "vpt_" + "a" * 32
    assert "vpt_" not in repr(sent) and "2468" not in repr(sent)


async def test_an_approved_sale_moves_ready_presenting_charging_result_ready(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    services, ledger = make_services(tmp_path, live_url, terminal)
    posted: list[Message] = []
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24), message_hook=posted.append) as pilot:
        kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
        await kiosk.key_amount("12500")
        await kiosk.until(lambda: app.sale.state is SaleState.PRESENTING)
        app.post_message(TokenScanned(wallet.qr_token))
        await kiosk.until(lambda: app.sale.state is SaleState.RESULT)
        await pilot.press("x")
        await kiosk.until(lambda: app.sale.state is SaleState.READY)
        await pilot.pause()
    ledger.close()
    moves = [(m.state, m.amount) for m in _of(posted, Sale.Moved)]
    assert moves == [
        (SaleState.READY, None),
        (SaleState.PRESENTING, 12_500),
        (SaleState.CHARGING, 12_500),
        (SaleState.RESULT, 12_500),
        (SaleState.READY, None),
    ]
    [result] = [m.result for m in _of(posted, Sale.Moved) if m.state is SaleState.RESULT]
    assert result is not None and result.state is IntentState.APPROVED
    assert len(_of(posted, NextSale)) == 1


async def test_the_sale_refuses_an_illegal_move() -> None:
    from qrpos.errors import IllegalSaleMove

    sale = Sale(lambda: None, lambda message: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(IllegalSaleMove, match="starting to charging"):
        sale.move(SaleState.CHARGING)


async def test_a_refusal_is_shown_in_the_screen_language_from_its_code(tmp_path: Path) -> None:
    app = _app(tmp_path, "mn")
    async with app.run_test(size=(80, 24)) as pilot:
        await _unpaired_start_done(pilot)
        screen = PresentCardScreen(100, timeout_s=3600)
        app.show_screen(screen)
        await pilot.pause()
        app.post_message(
            ScanRefusedMessage("This QR code is a web link, not a wallet pass.", "url")
        )
        await pilot.pause()
        await pilot.pause()
        shown = str(screen.query_one("#scan-status").render())
    assert "вэб холбоос" in shown and "web link" not in shown


async def test_a_url_shown_to_the_camera_is_refused_in_mongolian(tmp_path: Path) -> None:
    """Real frames, the real decoder: the refusal's code travels to the screen."""
    posted: list[Message] = []
    async with demo_kiosk(tmp_path, "mn", posted) as (kiosk, world):
        pilot = kiosk.pilot
        await kiosk.key_amount("500")
        await kiosk.on_screen("PresentCardScreen")
        assert world.services.virtual_phone is not None
        world.services.virtual_phone.present("https://example.com/pay?x=1")
        await kiosk.until(lambda: bool(_of(posted, ScanRefusedMessage)), timeout=15)
        await pilot.pause()
        shown = kiosk.text("#scan-status")
    assert [m.code for m in _of(posted, ScanRefusedMessage)][:1] == ["url"]
    assert "вэб холбоос" in shown and "web link" not in shown


async def test_the_charging_screen_shows_each_step_the_ledger_reports(tmp_path: Path) -> None:
    from qrpos.ledger import SaleProgress
    from qrpos.tui.messages import ChargeProgressed

    app = _app(tmp_path, "en")
    async with app.run_test(size=(80, 24)) as pilot:
        await _unpaired_start_done(pilot)
        screen = ChargingScreen(12_500, abandon_after_s=60)
        app.show_screen(screen)
        await pilot.pause()
        app.post_message(ChargeProgressed(SaleProgress(1, "retrying", 2, 0.4, "")))
        await pilot.pause()
        await pilot.pause()
        shown = str(screen.query_one("#phase").render())
    assert shown == "Sending again (attempt 2)…"
