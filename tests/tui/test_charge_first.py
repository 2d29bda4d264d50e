"""The charge goes out before its screen is drawn (issue 13, scan to send): the sale is
CHARGING from the moment the card is read, so nothing the Present screen still posts can
cancel it, and the ledger's early steps reach the Charging screen once it is up. Read
from the messages the kiosk posts (`message_hook`), as in test_screen_messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from kiosk_harness import FAST, Kiosk, make_services
from test_screen_messages import Host, _of
from test_snapshots import _app, _unpaired_start_done
from textual.message import Message

from qrpos.ledger import IntentState
from qrpos.present.i18n import set_language
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.simulator.faults import make_fault
from qrpos.tui.app import KioskApp
from qrpos.tui.messages import CameraStats, ChargeProgressed, PresentCancelled, TokenScanned
from qrpos.tui.sale import Sale, SaleState
from qrpos.tui.screens.charging import ChargingScreen


@pytest.fixture(autouse=True)
def _english() -> object:
    set_language("en")
    yield
    set_language("mn")


@pytest.mark.parametrize("timed_out", [False, True], ids=["escape", "timeout"])
async def test_a_cancel_after_the_card_is_read_never_cancels_its_charge(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
    timed_out: bool,
) -> None:
    """Esc or the present timeout, queued right behind the token while the Present screen
    is still up: the charge is under way, so the sale goes on to its result."""
    services, ledger = make_services(tmp_path, live_url, terminal)
    posted: list[Message] = []
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24), message_hook=posted.append) as pilot:
        kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
        await kiosk.key_amount("12500")
        await kiosk.until(lambda: app.sale.state is SaleState.PRESENTING)
        app.post_message(TokenScanned(wallet.qr_token))
        app.post_message(PresentCancelled(timed_out=timed_out))
        await kiosk.until(lambda: app.sale.state is SaleState.RESULT)
        await pilot.pause()
    ledger.close()
    assert len(_of(posted, PresentCancelled)) == 1
    moves = [(m.state, m.amount) for m in _of(posted, Sale.Moved)]
    assert moves == [
        (SaleState.READY, None),
        (SaleState.PRESENTING, 12_500),
        (SaleState.CHARGING, 12_500),
        (SaleState.RESULT, 12_500),
    ]
    [result] = [m.result for m in _of(posted, Sale.Moved) if m.state is SaleState.RESULT]
    assert result is not None and result.state is IntentState.APPROVED


async def test_steps_reported_before_the_charging_screen_reach_it_once_it_is_up(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    """The ledger reports "sending" before the Charging screen is announced: the step is
    kept and posted after the screen's move, and the screen (not yet mounted) shows it."""
    sandbox.faults.arm(make_fault("delay", seconds=1.0, operation="charge"))
    services, ledger = make_services(tmp_path, live_url, terminal)
    posted: list[Message] = []
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24), message_hook=posted.append) as pilot:
        kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
        await kiosk.key_amount("12500")
        await kiosk.until(lambda: app.sale.state is SaleState.PRESENTING)
        app.post_message(TokenScanned(wallet.qr_token))
        await kiosk.on_screen("ChargingScreen")
        await kiosk.until(lambda: kiosk.text("#phase") != "")
        shown = kiosk.text("#phase")
        await kiosk.until(lambda: app.sale.state is SaleState.RESULT)
    ledger.close()
    assert shown.startswith("Sending")
    order = [m for m in posted if isinstance(m, Sale.Moved | ChargeProgressed)]
    charging = next(
        i
        for i, m in enumerate(order)
        if isinstance(m, Sale.Moved) and m.state is SaleState.CHARGING
    )
    steps = [i for i, m in enumerate(order) if isinstance(m, ChargeProgressed)]
    assert steps and min(steps) > charging
    assert [m.progress.phase for m in _of(posted, ChargeProgressed)][:1] == ["sending"]


async def test_a_charging_screen_shows_a_step_it_took_before_it_was_mounted() -> None:
    screen = ChargingScreen(12_500, abandon_after_s=60)
    screen.show_progress("retrying", 2)
    assert not screen.is_mounted
    async with Host(screen).run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = str(screen.query_one("#phase").render())
    assert shown == "Sending again (attempt 2)…"


async def test_camera_stats_arriving_while_the_app_closes_are_dropped(tmp_path: Path) -> None:
    """The camera thread's last stats can land after the app's screens are gone."""
    app = _app(tmp_path, "en")
    async with app.run_test(size=(80, 24)) as pilot:
        await _unpaired_start_done(pilot)
    assert not app.screen_stack
    before = app.status
    app._camera_stats(CameraStats(fps=None, camera_state="error", last_error="unplugged"))
    assert app.status == before
