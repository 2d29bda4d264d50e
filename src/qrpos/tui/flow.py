"""What the kiosk's workers do: charge and keep resolving, recover, settle, pair, probe.

Runs on the app's event loop inside its workers (see `KioskApp`); the ledger does its
SQLite work on its own thread and the client is async, so nothing here blocks the UI.
The ledger and the client (httpx) are imported where used: the kiosk draws its first
screen before they load (see `qrpos.tui.startup`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from qrpos import manager_pin
from qrpos.tui.i18n import t
from qrpos.tui.screens.amount import AmountScreen
from qrpos.tui.screens.charging import ChargingScreen
from qrpos.tui.screens.pairing import PairingScreen
from qrpos.tui.screens.recovery import RecoveryScreen
from qrpos.tui.screens.result import ResultScreen

if TYPE_CHECKING:
    from qrpos.ledger import IntentView, SaleResult
    from qrpos.tui.app import KioskApp

log = logging.getLogger("qrpos.tui")


def blocking_sales(views: Sequence[IntentView]) -> list[IntentView]:
    """The sales whose outcome is still unknown (abandoned or queued refunds do not block)."""
    from qrpos.ledger import IntentState

    blocking = (IntentState.PENDING, IntentState.UNRESOLVED, IntentState.CREDENTIALS_REJECTED)
    return [v for v in views if v.kind == "charge" and v.state in blocking and v.charged is None]


class SaleFlow:
    """The sale logic of one `KioskApp`; every method runs inside one of its workers."""

    def __init__(self, app: KioskApp) -> None:
        self.app = app

    async def settle(self, result: SaleResult, screen: ChargingScreen) -> None:
        """Keep resolving an unclear sale until its outcome is known, then show it."""
        from qrpos.ledger import IntentState

        app = self.app
        desk = app.services.desk
        assert desk is not None
        while result.is_open and result.state is not IntentState.CREDENTIALS_REJECTED:
            screen.show_unclear()
            await asyncio.sleep(app.resolve_every_s)
            result = await desk.resolve(
                result.intent_id, deadline_s=app.charge_deadline_s, on_progress=app._progress
            )
        await self.refresh_unresolved()
        if result.state is IntentState.CREDENTIALS_REJECTED:
            app.lock()
            return
        self.show_result(result)

    def show_result(self, result: SaleResult) -> None:
        """The result screen for a finished (or abandoned) sale."""
        from qrpos.ledger import IntentState
        from qrpos.tui.outcome import result_view

        app = self.app
        charged = result.state in (IntentState.APPROVED, IntentState.CHARGED_PER_HISTORY)
        if charged and result.transaction is not None:
            app.receipts.charged(result.transaction)
        app.sale_intent = None
        app.sale_amount = None
        log.info("sale #%d ended %s", result.intent_id, result.state)
        app._show(ResultScreen(result_view(result), linger_s=app.result_linger_s))

    async def refresh_unresolved(self) -> int:
        """Count the open sales for the status bar."""
        desk = self.app.services.desk
        count = len(desk.unresolved()) if desk is not None else 0
        self.app.status.unresolved = count
        self.app.status.foreign = desk is not None and desk.foreign_activity() is not None
        self.app.refresh_status()
        return count

    async def check_health(self) -> None:
        """`GET /health`: reachable or not, and since when."""
        from qrpos.service import Probe

        app = self.app
        client = app.services.client
        if client is None:
            return
        online = isinstance(await client.health(), Probe)
        if online != app.status.online:
            app.status.online = online
            app.status.online_since = app.services.clock()
            app.refresh_status()

    async def settle_background(self) -> None:
        """Resolve what is open (including abandoned sales to refund) while the kiosk
        waits on the amount screen; stops at a 401."""
        from qrpos.ledger import IntentState

        app = self.app
        desk = app.services.desk
        if desk is None or app.locked or app.sale_amount is not None or app.sale_intent:
            return
        results = await desk.recover()
        if any(r.state is IntentState.CREDENTIALS_REJECTED for r in results):
            app.lock()
        await self.refresh_unresolved()

    async def recover(self, screen: RecoveryScreen) -> None:
        """At start (and after re-pairing): settle what is open before the first sale."""
        from qrpos.ledger import IntentState

        app = self.app
        desk = app.services.desk
        assert desk is not None
        if not blocking_sales(desk.unresolved()):
            await self.refresh_unresolved()
            self._sales_open()
            if isinstance(app.screen, AmountScreen) and not app.locked:
                # drawn before the services were in: keep what the cashier keyed
                app.screen.start_if_waiting()
            else:
                app.show_amount()
            # abandoned sales still watched and queued refunds settle in the background
            app.settle_in_background()
            return
        app._show(screen)
        while True:
            results = await desk.recover()
            if any(r.state is IntentState.CREDENTIALS_REJECTED for r in results):
                await self.refresh_unresolved()
                app.lock()
                return
            await self.refresh_unresolved()
            left = len(blocking_sales(desk.unresolved()))
            if not left:
                break
            screen.show_left(left)
            await asyncio.sleep(app.resolve_every_s)
        self._sales_open()
        app.show_amount()

    def _sales_open(self) -> None:
        """The start-up recovery is done: sales may start."""
        self.app.sales_ready = True
        self.app.status.starting = None
        self.app.refresh_status()

    async def pair(self, username: str, password: str, pin: str | None) -> None:
        """Verify with `GET /v1/transactions?limit=1`, store, set the PIN, resume."""
        from qrpos.service import CredentialsRejected, Page

        app = self.app
        services = app.services
        screen = app.screen
        form = screen if isinstance(screen, PairingScreen) else None
        client = services.make_client(username, password)
        outcome = await client.verify_credentials()
        if not isinstance(outcome, Page):
            await client.aclose()
            if form is not None:
                if isinstance(outcome, CredentialsRejected):
                    form.show_notice(t("pair.rejected"), error=True)
                else:
                    reason = getattr(outcome, "reason", None) or type(outcome).__name__
                    form.show_notice(t("pair.unreachable", reason=reason), error=True)
            return
        try:
            where = services.store_pairing(username, password)
        except Exception as exc:  # the store's own message names the fix, never the secret
            await client.aclose()
            if form is not None:
                form.show_notice(t("pair.store_failed", message=str(exc)), error=True)
            return
        if pin:
            manager_pin.set_pin(services.config.state_dir, pin)
        old = services.client
        services.install_client(client)
        if old is not None and old is not client:
            await old.aclose()
        log.info("terminal paired as %s (password stored in %s)", username, where)
        app.status.username = username
        app.locked = False
        app.notify(t("pair.saved", username=username), timeout=3)
        app.start_background()
        app.start_recovery()
