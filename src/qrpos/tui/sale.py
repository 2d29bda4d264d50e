"""The one owner of the sale: the work of each move. Its states and legal moves, with
their drawing, are the table of `qrpos.tui.sale_states` (re-exported here).

`Sale` holds the state and runs each move inside the app's workers; it never touches a
screen. Everything it has to say goes out as a message (`qrpos.tui.messages`): the app
puts up the screen of each `Sale.Moved`, relays progress to the screen on top, and keeps
the status bar's reactive status. The screens post what the cashier did (`PresentCancelled`,
`AbandonAsked`, `NextSale`, ...) and the app hands it to the matching method here.
A read card makes the sale CHARGING at once (no Esc or timeout cancels a charge under
way); its screen is announced a moment later, after the POST (`SaleTimings`).
The ledger and the client are imported where used: the first screen is drawn before
they load (see `qrpos.tui.startup`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from qrpos import manager_pin
from qrpos.errors import IllegalSaleMove
from qrpos.present.format import format_mnt
from qrpos.present.words import error_words
from qrpos.tui.messages import (
    ChargeProgressed,
    ChargeUnclear,
    CustomerViewChanged,
    PairingAnswered,
    RecoveryLeft,
    SaleCharged,
    StatusChanged,
)
from qrpos.tui.sale_states import (
    MOVES,
    UNDER_WAY,
    S,
    SaleState,
    SaleTimings,
    blocking_sales,
)
from qrpos.tui.services import KioskServices

if TYPE_CHECKING:
    from qrpos.ledger import SaleProgress, SaleResult

__all__ = ["MOVES", "UNDER_WAY", "Sale", "SaleState", "SaleTimings", "blocking_sales"]

log = logging.getLogger("qrpos.tui")


class Sale:
    """The sale's state machine. Async methods run in the app's "sale" worker group."""

    @dataclass
    class Moved(Message):
        """The sale entered `state`; the app puts up that state's screen."""

        state: SaleState
        amount: int | None = None
        result: SaleResult | None = None
        #: a catalogue key and its fields for the amount screen's notice line
        notice: str = ""
        notice_fields: dict[str, str] = field(default_factory=dict)
        error: bool = False

    def __init__(
        self,
        services: Callable[[], KioskServices],
        post: Callable[[Message], object],
        timings: SaleTimings = SaleTimings(),
    ) -> None:
        self._services = services
        self._post = post
        self.timings = timings
        self.state = SaleState.STARTING
        #: the amount while presenting and charging
        self.amount: int | None = None
        #: the amount of the last sale asked for (the repeat key charges it again)
        self.last_amount: int | None = None
        #: the ledger's intent while charging
        self.intent_id: int | None = None
        #: progress reported before the Charging screen was announced, posted after it
        self._early_progress: list[SaleProgress] | None = None
        #: the result on screen (RESULT only), for the customer display
        self.result: SaleResult | None = None
        #: sales started so far (the customer display tells two apart by it)
        self.sale_number = 0
        #: `time.monotonic()` when the code was read (the customer's "wait" counts from it)
        self.charge_started = 0.0

    # --- moves --------------------------------------------------------------------------

    def move(
        self,
        to: SaleState,
        *,
        result: SaleResult | None = None,
        notice: str = "",
        error: bool = False,
        **fields: str,
    ) -> None:
        """Enter `to` (if legal) and tell the app, which shows that state's screen."""
        self._enter(to)
        if to is S.RESULT:
            self.result = result
        self._post(Sale.Moved(to, self.amount, result, notice, dict(fields), error))
        self.publish()

    def _enter(self, to: SaleState) -> None:
        if to not in MOVES[self.state]:
            raise IllegalSaleMove(self.state.value, to.value)
        log.debug("sale %s -> %s", self.state.value, to.value)
        self.state = to
        if to not in (S.PRESENTING, S.CHARGING, S.RESULT):
            self.amount = None
        if to is not S.CHARGING:
            self.intent_id = None
        if to is not S.RESULT:
            self.result = None
        self._early_progress = None

    def publish(self) -> None:
        """Tell the customer display where the sale stands, in the till's language (it
        never waits: the display's worker takes the newest view when it can)."""
        from qrpos.present.customer import SaleSnapshot, customer_view

        result = self.result if self.state is S.RESULT else None
        charging = self.state is S.CHARGING
        snapshot = SaleSnapshot(
            self.state.value,
            self.amount,
            result.state.value if result is not None else None,
            result.decline_code if result is not None else None,
            time.monotonic() - self.charge_started if charging else 0.0,
            self.sale_number,
        )
        display = self._services().customer_display
        view = customer_view(snapshot, display.shop if display is not None else "")
        if display is not None:
            display.show(view)
        self._post(CustomerViewChanged(view))

    @property
    def under_way(self) -> bool:
        """True from the amount's Enter to the result."""
        return self.state in UNDER_WAY

    def lock(self) -> None:
        """Any 401: no sale until re-paired. The ledger keeps every pending intent."""
        self._disarm()
        self.move(S.LOCKED)

    def to_pairing(self) -> None:
        """Open the pairing form (first start, or from the lock screen)."""
        self.move(S.PAIRING)

    def next_sale(self, notice: str = "", *, error: bool = False, **fields: str) -> None:
        """Back to the amount (after a result, a cancel, or a refusal before sending)."""
        self.move(S.READY, result=None, notice=notice, error=error, **fields)

    def failed(self, error: BaseException) -> None:
        """A sale worker failed: the ledger kept what was in flight; back to a safe screen."""
        if self.state is not S.LOCKED:
            self._disarm()
            # a bug, logged with its traceback by the app; the cashier reads what it means
            self.next_sale("amount.sale_failed", error=True)

    # --- the sale -----------------------------------------------------------------------

    async def present(self, amount: int) -> None:
        """Arm the camera and ask for the card, unless an earlier sale is still open."""
        desk = self._services().desk
        if desk is None:
            self.next_sale("amount.not_paired", error=True)
            return
        if blocking_sales(desk.listing.unresolved()):
            self.next_sale("amount.unresolved_blocks", error=True)
            return
        from qrpos.ledger.shifts import shift_needed

        if await asyncio.to_thread(shift_needed, desk.ledger):
            # the till keeps shifts: every sale belongs to a cashier's
            self.next_sale("amount.no_shift", error=True)
            return
        self.amount = self.last_amount = amount
        self.sale_number += 1
        self.move(S.PRESENTING)
        scanner = self._services().scanner
        if scanner is not None:
            scanner.arm(allow_repeat=True)

    def cancel(self, *, timed_out: bool) -> None:
        """Esc on the card screen, or nobody showed a card in time."""
        if self.state is not S.PRESENTING:
            return
        self._disarm()
        self.next_sale("present.timeout" if timed_out else "", error=timed_out)

    def accept_held_card(self) -> None:
        """The cashier confirmed the card left in view: the scanner may hand it over."""
        scanner = self._services().scanner
        if self.state is S.PRESENTING and scanner is not None:
            scanner.accept_held()

    def token_read(self, token: str) -> bool:
        """A token arrived: True when it starts the charge (only while presenting). The
        sale is CHARGING from here on; its screen follows (`charge` announces it)."""
        if self.state is not S.PRESENTING or self.amount is None:
            return False
        self._disarm()
        self._enter(S.CHARGING)  # announced by `charge`, once the request is out
        self._early_progress = []
        self.charge_started = time.monotonic()
        self.publish()  # the customer sees "checking" at once
        demo = self._services().demo
        if demo is not None:
            demo.token_read()
        return True

    async def charge(self, token: str) -> None:
        """Charge through the ledger, then keep resolving until the outcome is known."""
        from qrpos.ledger import ChargeRefusedLocally, TokenAlreadyPaid, TokenInReview

        desk = self._services().desk
        assert desk is not None and self.amount is not None and self.state is S.CHARGING
        sending = asyncio.ensure_future(
            desk.charge(
                self.amount,
                token,
                deadline_s=self.timings.charge_deadline_s,
                on_progress=self._progress,
            )
        )
        try:
            await asyncio.wait({sending}, timeout=self.timings.charging_screen_after_s)
            self._announce_charging()
            result = await sending
        except asyncio.CancelledError:
            sending.cancel()
            raise
        except (TokenAlreadyPaid, TokenInReview) as exc:
            # the code paid (or may have paid) for an earlier sale: refused like a code just
            # paid, until it leaves the view or the pass shows a new one
            scanner = self._services().scanner
            if scanner is not None:
                scanner.mark_sale_ended(charged=True)
            fields = {"intent": str(exc.intent_id), "amount": format_mnt(exc.amount_mnt)}
            paid = isinstance(exc, TokenAlreadyPaid)
            notice = "amount.token_already_paid" if paid else "amount.token_in_review"
            self.next_sale(notice, error=True, **fields)
            return
        except ChargeRefusedLocally as exc:
            self.next_sale("amount.refused_locally", error=True, message=error_words(exc))
            return
        self.intent_id = result.intent_id
        await self._settle(result)

    def _announce_charging(self) -> None:
        """Put up the Charging screen, then the steps reported before it was up."""
        early, self._early_progress = self._early_progress, None
        if self.state is S.CHARGING and early is not None:
            self._post(Sale.Moved(S.CHARGING, self.amount))
            for progress in early:
                self._post(ChargeProgressed(progress))

    async def _settle(self, result: SaleResult) -> None:
        from qrpos.ledger import IntentState

        desk = self._services().desk
        assert desk is not None
        while result.is_open and result.state is not IntentState.CREDENTIALS_REJECTED:
            self._post(ChargeUnclear())
            await asyncio.sleep(self.timings.resolve_every_s)
            result = await desk.resolve(
                result.intent_id,
                deadline_s=self.timings.charge_deadline_s,
                on_progress=self._progress,
            )
        await self.count_unresolved()
        if result.state is IntentState.CREDENTIALS_REJECTED:
            self.lock()
            return
        self.show_result(result)

    async def abandon(self) -> None:
        """Never send it again; the background settler refunds it if it was charged."""
        desk = self._services().desk
        if self.state is not S.CHARGING or self.intent_id is None or desk is None:
            return
        self.show_result(await desk.abandon(self.intent_id))

    def show_result(self, result: SaleResult) -> None:
        """The sale ended (or was abandoned): its result, and its receipt followed."""

        # the ledger's one definition: charged and kept (an abandon proven charged is not:
        # its refund is queued), never a list of states of the screen's own
        charged = result.sold
        if charged and result.transaction is not None:
            self._post(SaleCharged(result.transaction))
        log.info("sale #%d ended %s", result.intent_id, result.state)
        scanner = self._services().scanner
        if scanner is not None:
            # a card still in view now must leave (or be confirmed) before it is charged
            scanner.mark_sale_ended(charged=charged)
        self.amount = result.amount_mnt
        self.move(S.RESULT, result=result)

    def _progress(self, progress: SaleProgress) -> None:
        if self._early_progress is not None:
            self._early_progress.append(progress)
        else:
            self._post(ChargeProgressed(progress))

    def _disarm(self) -> None:
        scanner = self._services().scanner
        if scanner is not None:
            scanner.disarm()

    # --- around the sale ----------------------------------------------------------------

    async def count_unresolved(self) -> int:
        """Count the open sales for the status bar."""
        desk = self._services().desk
        count = len(desk.listing.unresolved()) if desk is not None else 0
        foreign = desk is not None and desk.listing.foreign_activity() is not None
        self._post(StatusChanged(unresolved=count, foreign=foreign))
        return count

    async def check_health(self) -> None:
        """Reachable or not: any recent answer proves it; `GET /health` only after 10
        quiet minutes (the fleet shares the service's request ceiling)."""
        from qrpos.service import Probe
        from qrpos.service.contact import probe_due

        client = self._services().client
        if client is None:
            return
        contact = client.contact
        if probe_due(contact.last_response_at, contact.reachable, time.time()):
            online = isinstance(await client.health(), Probe)
        else:
            online = True
        self._post(StatusChanged(online=online))

    async def settle_background(self) -> None:
        """Resolve what is open (abandoned sales to refund too) while the kiosk waits on
        the amount screen; stops at a 401."""
        from qrpos.ledger import IntentState

        desk = self._services().desk
        if desk is None or self.state not in (S.READY, S.RESULT):
            return
        results = await desk.recover()
        if any(r.state is IntentState.CREDENTIALS_REJECTED for r in results):
            self.lock()
        await self.count_unresolved()

    async def recover(self) -> bool:
        """At start (and after pairing): settle what is open before the first sale.
        True when sales may start (False: locked by a 401)."""
        from qrpos.ledger import IntentState

        desk = self._services().desk
        assert desk is not None
        if not blocking_sales(desk.listing.unresolved()):
            await self.count_unresolved()
            self._post(StatusChanged(starting=""))
            self.next_sale()
            return True
        self.move(S.RECOVERING)
        while True:
            results = await desk.recover()
            await self.count_unresolved()
            if any(r.state is IntentState.CREDENTIALS_REJECTED for r in results):
                self.lock()
                return False
            left = len(blocking_sales(desk.listing.unresolved()))
            if not left:
                break
            self._post(RecoveryLeft(left))
            await asyncio.sleep(self.timings.resolve_every_s)
        self._post(StatusChanged(starting=""))
        self.next_sale()
        return True

    async def pair(
        self, username: str, password: str, pin: str | None, base_url: str | None = None
    ) -> bool:
        """Verify with `GET /v1/transactions?limit=1`, store, set the PIN. True once paired
        (the app then recovers); False after saying why on the form. `base_url`, when the
        form asked for it, is the service address from now on (kept only once paired)."""
        from qrpos.service import CredentialsRejected, InsecureBaseURL, Page

        services = self._services()
        address = services.service_address
        previous = address.value if address is not None else None
        if address is not None and base_url is not None:
            address.value = base_url
        try:
            client = services.make_client(username, password)
        except InsecureBaseURL as exc:  # plain http to a host that is not this machine
            if address is not None:
                address.value = previous
            self._post(PairingAnswered("pair.unreachable", {"reason": error_words(exc)}))
            return False
        outcome = await client.verify_credentials()
        if not isinstance(outcome, Page):
            await client.aclose()
            if address is not None:
                address.value = previous
            if isinstance(outcome, CredentialsRejected):
                self._post(PairingAnswered("pair.rejected"))
            else:
                reason = getattr(outcome, "reason", None) or type(outcome).__name__
                self._post(PairingAnswered("pair.unreachable", {"reason": str(reason)}))
            return False
        try:
            # off the event loop: on a kiosk root verifies again and encrypts (seconds)
            where = await asyncio.to_thread(services.store_pairing, username, password)
        except Exception as exc:  # the store's own message names the fix, never the secret
            await client.aclose()
            if address is not None:
                address.value = previous
            self._post(PairingAnswered("pair.store_failed", {"message": error_words(exc)}))
            return False
        if pin:
            manager_pin.set_pin(services.config.state_dir, pin)
        old = services.client
        services.install_client(client)
        if old is not None and old is not client:
            await old.aclose()
        log.info("terminal paired as %s (password stored in %s)", username, where)
        self._post(StatusChanged(username=username))
        self._post(PairingAnswered("pair.saved", {"username": username}, error=False))
        return True
