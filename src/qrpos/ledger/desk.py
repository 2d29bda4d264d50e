"""`ChargeDesk`: the one way the kiosk and the CLI charge, resolve, abandon and refund.

A sale is stored before its first byte is sent; only one sale is open at a time
(`states.is_open`); recovery resolves what an earlier run left before a new sale is taken.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

from qrpos import spec
from qrpos.ledger import clock as clock_module
from qrpos.ledger import refunds_sql, reviews, sales_sql, service_sql
from qrpos.ledger.abandon import abandon_changes
from qrpos.ledger.clockreading import DATE_RESOLUTION_S
from qrpos.ledger.context import Context
from qrpos.ledger.events import Effect, RefundEvent, SaleEvent
from qrpos.ledger.listing import OutboxListing, result_of
from qrpos.ledger.lookup import check_history
from qrpos.ledger.moves import refund_move, sale_move
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.refund_queue import refund_by_hand, refund_for_sale
from qrpos.ledger.resolver import ProgressCallback, drive
from qrpos.ledger.reversals import drive_reversal, price_from_history
from qrpos.ledger.reviews import ReviewDecision
from qrpos.ledger.states import IntentRow, IntentState, RefundReason, ReversalRow, ReversalState
from qrpos.ledger.store import Ledger
from qrpos.ledger.views import (
    AmountOutOfRange,
    InvalidToken,
    LedgerUnhealthy,
    OutboxBusy,
    ReversalResult,
    SaleResult,
    TokenAlreadyPaid,
    TokenInReview,
    UnknownIntent,
    UnresolvedChargeExists,
)
from qrpos.redact import escape_text
from qrpos.said import say
from qrpos.service import CredentialsRejected, Page, TerminalClient

#: how long to wait for another process that holds the outbox before refusing
LOCK_WAIT_S = 10.0


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ChargeDesk:
    """Charges through the outbox. One desk per process; several processes may share a file."""

    def __init__(
        self,
        ledger: Ledger,
        client: TerminalClient,
        *,
        policy: RetryPolicy | None = None,
        clock: Callable[[], datetime] = _utcnow,
        boot_clock: Callable[[], tuple[str | None, float | None]] = clock_module.boot_stamp,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.ledger = ledger
        # a request given up on may still commit until the client's timeout has passed
        chosen = policy or RetryPolicy(settle_s=client.timeout_s + 5.0)
        self._ctx = Context(ledger, client, chosen, clock, boot_clock, jitter)
        self._lock = asyncio.Lock()
        self._lock_path = ledger.path.with_name(ledger.path.name + ".lock")
        #: the outbox as a reader sees it: lists, reviews, refunds, the audit trail and
        #: the service's clock (`qrpos.ledger.listing.OutboxListing`)
        self.listing = OutboxListing(ledger, self._ctx.clock)
        #: the client whose credentials were last found live (True) or dead (False: a 401)
        self._pairing: tuple[TerminalClient, bool] | None = None

    @property
    def policy(self) -> RetryPolicy:
        """The retry limits in force."""
        return self._ctx.policy

    def replace_client(self, client: TerminalClient) -> None:
        """Use a new client (after re-pairing); held intents resume on the next resolve."""
        self._ctx.client = client
        self._pairing = (client, True)

    async def _repaired(self) -> bool:
        """Was the terminal re-paired since a sale or a refund was kept for it (a 401)?

        A 401 means dead credentials: nothing is sent again under them (spec). A client
        given by `replace_client` is a re-pairing. Otherwise this process asks once, with
        the cheapest request (`verify_credentials`), whether the credentials it holds
        live: a 200 proves they are not the ones that were rejected (re-paired, perhaps
        by another process, or before this one started); a 401 is remembered until the
        client is replaced, so no pass repeats it; no answer asks again next pass."""
        client = self._ctx.client
        known = self._pairing
        if known is not None and known[0] is client:
            return known[1]
        outcome = await client.verify_credentials()
        if isinstance(outcome, Page):
            self._pairing = (client, True)
        elif isinstance(outcome, CredentialsRejected):
            self._pairing = (client, False)
        return isinstance(outcome, Page)

    def _rejected(self, state: IntentState | ReversalState) -> None:
        """Remember a 401 of the client in use: its credentials are dead."""
        if state in (IntentState.CREDENTIALS_REJECTED, ReversalState.CREDENTIALS_REJECTED):
            self._pairing = (self._ctx.client, False)

    # --- exclusive access --------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[None]:
        """This coroutine alone, in this process alone, drives the outbox."""
        async with self._lock:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                give_up = time.monotonic() + LOCK_WAIT_S
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > give_up:
                            raise OutboxBusy(
                                say(
                                    "error.outbox_busy",
                                    "another qrpos process is working on the outbox; "
                                    "try again when it has finished",
                                )
                            ) from None
                        await asyncio.sleep(0.05)
                yield
            finally:
                os.close(fd)  # closing releases the flock

    # --- charging ----------------------------------------------------------------------

    async def charge(
        self,
        amount_mnt: int,
        token: str,
        *,
        deadline_s: float,
        on_progress: ProgressCallback | None = None,
    ) -> SaleResult:
        """Charge `amount_mnt` to the wallet behind `token` (exactly as scanned).

        The intent is committed before anything is sent. Returns when the sale
        leaves the open states or `deadline_s` passed (then it is still open, and kept
        for `resolve`). Raises a `ChargeRefusedLocally` subclass, before anything
        is stored or sent, for a bad amount or token, an unhealthy outbox, an earlier
        unresolved sale, a token that already paid for a sale of this outbox
        (`TokenAlreadyPaid`) or whose sale waits for a review (`TokenInReview`).
        Repeating the call with the same token and amount while that sale is unresolved
        resumes it instead of refusing.
        """
        if (
            isinstance(amount_mnt, bool)
            or not isinstance(amount_mnt, int)
            or not (spec.amount_in_range(amount_mnt))
        ):
            raise AmountOutOfRange(
                say(
                    "error.amount_out_of_range",
                    "the amount must be a whole number of tugrik from {amount_min} to {amount_max}",
                    amount_min=spec.AMOUNT_MIN_MNT,
                    amount_max=spec.AMOUNT_MAX_MNT,
                )
            )
        if not isinstance(token, str) or not token:
            raise InvalidToken(say("error.no_token", "no QR token to charge"))
        if not self.ledger.integrity_ok:
            raise LedgerUnhealthy(self.ledger.integrity_message)
        deadline = time.monotonic() + deadline_s
        async with self._exclusive():
            digest = sales_sql.token_digest(token)
            key = f"qrpos-{uuid.uuid4().hex}"
            moment = self._ctx.moment()
            username = self._ctx.client.username

            def store(conn: Any) -> tuple[IntentRow, bool]:
                for row in sales_sql.open_intents(conn):
                    if row.token_sha256 == digest and row.amount_mnt == amount_mnt:
                        return row, False
                    raise UnresolvedChargeExists(row.id, row.amount_mnt)
                # a sale of the code that waits for a person says so first, though it
                # holds a row (a refund refused): "already paid" would tell the cashier
                # the money is settled while the owner has yet to decide it
                held = sales_sql.in_review_with_token(conn, digest)
                if held is not None:
                    raise TokenInReview(held.id, held.amount_mnt)
                paid = sales_sql.paid_with_token(conn, digest)
                if paid is not None and paid.tx_id is not None:
                    raise TokenAlreadyPaid(paid.id, paid.amount_mnt, paid.tx_id)
                new_id = sales_sql.insert_intent(
                    conn,
                    idem_key=key,
                    token=token,
                    amount_mnt=amount_mnt,
                    now=moment.wall,
                    boot=(moment.boot, moment.up),
                    username=username,
                )
                created = sales_sql.get_intent(conn, new_id)
                assert created is not None
                return created, True

            row, fresh = await self.ledger.awrite(store)
            row = await drive(
                self._ctx,
                row,
                look=check_history,
                deadline=deadline,
                fresh=fresh,
                progress=on_progress,
            )
            self._rejected(row.state)
            return await result_of(self.ledger, row)

    async def resolve(
        self, intent_id: int, *, deadline_s: float, on_progress: ProgressCallback | None = None
    ) -> SaleResult:
        """Drive one sale until it leaves the open states (a watched abandon: while a look-up
        of it is due) or `deadline_s` passes (after re-pairing too)."""
        deadline = time.monotonic() + deadline_s
        async with self._exclusive():
            row = await self._load(intent_id)
            row = await self._drive_one(row, deadline, on_progress)
            return await result_of(self.ledger, row)

    async def recover(
        self,
        on_progress: ProgressCallback | None = None,
        *,
        deadline_s: float = 30.0,
        patient: bool = False,
    ) -> list[SaleResult]:
        """Resolve what earlier runs left: open sales, watched abandons, queued refunds.

        Run at start-up before any new sale: one pass, in which a watched abandoned sale
        whose next look-up is not due yet is left for the next pass (it blocks no sale).
        `patient` (`qrpos outbox resolve`) goes on with passes, a second apart, until
        nothing is left or the deadline passes. Returns the latest result of each sale
        it worked on (those still open are unresolved or credentials_rejected).
        """
        deadline = time.monotonic() + deadline_s
        results: dict[int, SaleResult] = {}
        async with self._exclusive():
            while True:
                rows = await self.ledger.aread(
                    lambda c: sales_sql.open_intents(c) + sales_sql.watched_intents(c)
                )
                for row in rows:
                    row = await self._drive_one(row, deadline, on_progress)
                    results[row.id] = await result_of(self.ledger, row)
                for rev in await self.ledger.aread(refunds_sql.open_reversals):
                    rev = await self._reverse_row(rev, deadline)
                    if rev.intent_id is not None:
                        # its sale (an abandon proven charged) is worked on through it
                        sale = await self._load(rev.intent_id)
                        results[sale.id] = await result_of(self.ledger, sale)
                left = deadline - time.monotonic()
                if not patient or not rows or left <= 0:
                    break
                await asyncio.sleep(min(1.0, left))
        return list(results.values())

    async def _drive_one(
        self, row: IntentRow, deadline: float, on_progress: ProgressCallback | None
    ) -> IntentRow:
        if row.state is IntentState.CREDENTIALS_REJECTED and row.charged is None:
            if not await self._repaired():
                return row  # kept for re-pairing: nothing is sent under dead credentials
            # after re-pairing: only the history can tell, the customer has long gone
            repaired = IntentState(sale_move(row.state, SaleEvent.REPAIRED).next)
            row = await self.ledger.awrite(
                lambda c: sales_sql.update_intent(
                    c, row.id, state=repaired, may_resend=0, token=None
                )
            )
        row = await drive(
            self._ctx, row, look=check_history, deadline=deadline, progress=on_progress
        )
        self._rejected(row.state)
        if row.state is IntentState.ABANDONED and row.tx_id is not None:
            # the table's `Effect.REFUND` of an abandoned sale proven charged
            # (`SALE_MOVES[abandoned][lookup_proven]`), queued once, carried out here
            row = await self._refund_abandoned(row, deadline)
        return row

    async def _refund_abandoned(self, row: IntentRow, deadline: float) -> IntentRow:
        tx_id = row.tx_id
        assert tx_id is not None

        def queue(conn: Any) -> ReversalRow:
            # the row's one refund: a refused one is queued again, one made by hand is
            # attached, and if it has already ended the sale hears it now (the table moves it)
            now = self._ctx.now()
            sale = sales_sql.get_intent(conn, row.id)
            assert sale is not None
            rev, answered = refund_for_sale(
                conn, tx_id=tx_id, sale=sale, reason=RefundReason.ABANDONED, now=now
            )
            if answered:
                sales_sql.update_intent(conn, sale.id, **answered)
            return rev

        rev = await self.ledger.awrite(queue)
        await self._reverse_row(rev, deadline)
        return await self._load(row.id)

    async def abandon(self, intent_id: int) -> SaleResult:
        """The cashier gives up on a sale: it is never sent again.

        Abandon means "stop waiting at the till", never "forget". If a request may have
        reached the service, the history stays watched; a charge proven there later is
        refunded automatically (reversed_after_abandon), and one that cannot be proven
        either way goes to a person's review. A sale already in review stays there (its
        review is the question still open); a settled sale is returned unchanged.
        """
        async with self._exclusive():
            now = self._ctx.now()
            boot = self._ctx.boot()

            def give_up(conn: Any) -> IntentRow:
                row = sales_sql.get_intent(conn, intent_id)
                if row is None:
                    raise UnknownIntent(
                        say("error.no_charge", "no charge #{intent}", intent=intent_id)
                    )
                if not row.is_open:
                    return row  # settled, or in review: nothing to stop waiting for
                changes, move = abandon_changes(row, now, boot)
                changes["watching"] = 1 if Effect.WATCH in move.effects else 0
                return sales_sql.update_intent(conn, intent_id, **changes)

            return await result_of(self.ledger, await self.ledger.awrite(give_up))

    async def _load(self, intent_id: int) -> IntentRow:
        row = await self.ledger.aread(lambda c: sales_sql.get_intent(c, intent_id))
        if row is None:
            raise UnknownIntent(say("error.no_charge", "no charge #{intent}", intent=intent_id))
        return row

    # --- reviews -----------------------------------------------------------------------

    async def settle_review(
        self,
        intent_id: int,
        decision: ReviewDecision,
        *,
        actor: str = "owner",
        deadline_s: float = 30.0,
    ) -> SaleResult:
        """A person decides a review: this row is the sale, refund it, or nothing charged.

        Raises `ReviewRefused` (nothing changed) for a sale not in review, a row not among
        its candidates, or one another sale owns. The decision, `actor` and time go to the
        audit trail; a refund goes through the durable reversal queue.
        """
        if not isinstance(decision, reviews.DECISIONS):
            raise TypeError(f"not a review decision: {type(decision).__name__}")
        deadline = time.monotonic() + deadline_s
        async with self._exclusive():
            sale = await self._load(intent_id)
            seen, checkable = await reviews.read_named_row(
                self.ledger, self._ctx.client, sale, decision
            )
            now = self._ctx.now()
            _, reversal_id = await self.ledger.awrite(
                lambda c: reviews.decide(
                    c, intent_id, decision, actor, now, seen=seen, checkable=checkable
                )
            )
            if reversal_id is not None:
                rev = await self.ledger.aread(lambda c: refunds_sql.get_reversal(c, reversal_id))
                if rev is not None:
                    await self._reverse_row(rev, deadline)
            return await result_of(self.ledger, await self._load(intent_id))

    def clear_foreign_activity(self) -> None:
        """An owner clears the warning: history matching resumes for rows committed after
        the clear (`service_sql.clear_foreign`)."""
        now, policy = self._ctx.now(), self._ctx.policy

        def clear(conn: Any) -> None:
            until = service_sql.latest_service_time(
                conn, now, policy.window_margin_s, policy.max_clock_skew_s
            )
            margin = policy.window_margin_s + DATE_RESOLUTION_S
            service_sql.clear_foreign(conn, now, until, margin)

        self.ledger.write(clear)

    # --- refunds -----------------------------------------------------------------------

    async def reverse(self, tx_id: str, *, deadline_s: float = 30.0) -> ReversalResult:
        """Refund a charge in full through the durable queue (safe to repeat)."""
        if not spec.TX_ID_RE.match(tx_id):
            return ReversalResult(
                tx_id=escape_text(tx_id[:80]),
                state="refused",
                message="not a transaction id (tx_ followed by letters and digits)",
            )
        deadline = time.monotonic() + deadline_s
        async with self._exclusive():
            now = self._ctx.now()
            rev = await self.ledger.awrite(lambda c: refund_by_hand(c, tx_id=tx_id, now=now))
            rev = await self._reverse_row(rev, deadline)
            return ReversalResult.from_row(rev)

    async def _reverse_row(self, rev: ReversalRow, deadline: float) -> ReversalRow:
        if rev.state is ReversalState.CREDENTIALS_REJECTED:
            if not await self._repaired():
                return rev  # kept for re-pairing: nothing is sent under dead credentials
            again = ReversalState(refund_move(rev.state, RefundEvent.REPAIRED).next)
            rev = await self.ledger.awrite(
                lambda c: refunds_sql.update_reversal(c, rev.id, state=again)
            )
        rev = await drive_reversal(self._ctx, rev, deadline=deadline)
        self._rejected(rev.state)
        return await price_from_history(self._ctx, rev, deadline=deadline)
