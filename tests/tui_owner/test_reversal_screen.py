"""Reversal behind the manager PIN, and the receipt followed until voided."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import httpx
from owner_harness import PIN, OwnerHost, row_ids
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from pilot_wait import until
from qrpos.reports.pin_gate import read_clocks
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.simulator.testing import asgi_transport
from qrpos.tui.screens.owner.endofday import EndOfDayScreen
from qrpos.tui.screens.owner.history import HistoryScreen
from qrpos.tui.screens.owner.messages import ReversalDone
from qrpos.tui.screens.owner.reversal import ReversalScreen
from qrpos.tui.services import KioskServices, utc_now


async def sale(services: KioskServices, sandbox: Sandbox, wallet: WalletInfo, amount: int) -> str:
    """A sale as the kiosk makes it: through the outbox with the customer's current token."""
    assert services.desk is not None
    token = sandbox.wallet(wallet.wallet_id).qr_token
    result = await services.desk.charge(amount, token, deadline_s=5)
    assert result.transaction is not None
    return result.transaction.id


async def type_pin(pilot: Any, pin: str) -> None:
    await pilot.press(*pin, "enter")


async def test_reversal_from_history_is_refunded_shown_reversed_then_voided_and_counted(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    sim_app: Any,
    wallet: WalletInfo,
) -> None:
    services.clock = utc_now  # sales happen now, as in the demo
    kept = await sale(services, sandbox, wallet, 4_500)
    tx_id = await sale(services, sandbox, wallet, 12_000)
    admin = httpx.AsyncClient(transport=asgi_transport(sim_app), base_url="http://127.0.0.1")
    assert (await admin.post("/_sim/vat/settle")).status_code in (200, 204)
    posted: list[Message] = []
    async with host(first_poll_s=30).run_test(size=(100, 30), message_hook=posted.append) as pilot:
        await pilot.press("1")
        history = pilot.app.screen
        assert isinstance(history, HistoryScreen)
        table: DataTable[str] = history.query_one(DataTable)
        await until(pilot, lambda: table.row_count == 2, "history loaded")
        assert row_ids(table)[0] == tx_id and table.get_row_at(0)[3] == "issued"
        await pilot.press("r")
        dialog = pilot.app.screen
        assert isinstance(dialog, ReversalScreen)
        assert dialog.query_one("#tx", Input).value == tx_id
        await type_pin(pilot, PIN)
        await until(pilot, lambda: (dialog.outcome or "").startswith("Refunded"), "refunded")
        assert sandbox.transaction(tx_id).status == "REVERSED"
        assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 4_500
        # one message (the hook sees it again at each node it bubbles through)
        assert {(id(m), m.tx_id) for m in posted if isinstance(m, ReversalDone)} == {
            (id(next(m for m in posted if isinstance(m, ReversalDone))), tx_id)
        }
        await pilot.press("escape")
        # the follow-up polls at once after a reversal: the row reads REVERSED, issued
        await until(pilot, lambda: table.get_row_at(0)[2] == "REVERSED", "row reversed")
        assert table.get_row_at(0)[3] == "issued"
        receipt = sandbox.transaction(tx_id).vat_receipt_id
        assert receipt and receipt in str(history.query_one("#selected", Static).render())
        assert (await admin.post("/_sim/vat/settle")).status_code in (200, 204)
        history.ctx.follower.schedule(0.05)  # stands in for the 30 s timer
        await until(pilot, lambda: table.get_row_at(0)[3] == "voided", "receipt voided")
        # the number is kept as a historical record
        assert receipt in str(history.query_one("#selected", Static).render())
        await pilot.press("escape", "3")
        eod = pilot.app.screen
        assert isinstance(eod, EndOfDayScreen)
        await until(pilot, lambda: eod.eod is not None, "end of day")
        assert eod.eod is not None
        assert (eod.eod.charges_count, eod.eod.gross_mnt) == (1, 4_500)
        assert (eod.eod.reversed_count, eod.eod.reversed_mnt) == (1, 12_000)
        assert (eod.eod.vat_issued, eod.eod.vat_voided) == (1, 1)
        assert eod.eod.reconciliation is not None and eod.eod.reconciliation.matched == 2
        assert kept != tx_id
    await admin.aclose()


async def test_wrong_pin_is_refused_then_paused_and_nothing_is_sent(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    wallet: WalletInfo,
) -> None:
    tx_id = await sale(services, sandbox, wallet, 3_000)
    async with host(first_poll_s=30).run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        dialog = pilot.app.screen
        assert isinstance(dialog, ReversalScreen)
        await pilot.press(*tx_id, "enter")
        await type_pin(pilot, "0000")
        await until(pilot, lambda: (dialog.outcome or "").startswith("Wrong PIN"), "refused")
        assert dialog.query_one("#pin", Input).value == ""  # never left on screen
        await type_pin(pilot, "1111")
        await until(pilot, lambda: "1 attempt" in (dialog.outcome or ""), "second refusal")
        await type_pin(pilot, "2222")
        await until(pilot, lambda: "Too many wrong PINs" in (dialog.outcome or ""), "pause")
        await type_pin(pilot, PIN)  # even the right PIN waits out the pause
        await until(pilot, lambda: not dialog.busy, "checked")
        await pilot.pause(0.1)
        assert "Too many wrong PINs" in (dialog.outcome or "")
    assert sandbox.transaction(tx_id).status == "COMPLETED"


async def test_the_pin_pause_counts_down_and_then_says_to_try_again(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    wallet: WalletInfo,
) -> None:
    """A paused PIN is not a frozen message: the seconds go down, and the end is said."""
    tx_id = await sale(services, sandbox, wallet, 3_000)
    async with host(first_poll_s=30).run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        dialog = pilot.app.screen
        assert isinstance(dialog, ReversalScreen)
        await pilot.press(*tx_id, "enter")
        for wrong in ("0000", "1111", "2222"):
            await type_pin(pilot, wrong)
            await until(pilot, lambda: not dialog.busy, "checked")
        assert "Too many wrong PINs" in (dialog.outcome or "")
        # the gate's pause, shortened to 2.5 s from now (its own file, as a restart reads it)
        gate = dialog.ctx.pin_gate
        now = read_clocks()
        shorter = dataclasses.replace(
            gate._load(), up_until=now.up + 2.5, wall_until=now.wall + 2.5, length=2.5
        )
        gate._save(shorter)
        seen: list[str] = []

        def over() -> bool:
            if dialog.outcome and (not seen or seen[-1] != dialog.outcome):
                seen.append(dialog.outcome)
            return "PIN again" in (dialog.outcome or "")

        for _ in range(60):  # up to 6 s
            if over():
                break
            await pilot.pause(0.1)
        assert over(), seen
        counted = [m for m in seen if m.startswith("Too many wrong PINs")]
        assert any("in 2 s" in m or "in 1 s" in m for m in counted), seen
    assert sandbox.transaction(tx_id).status == "COMPLETED"  # nothing was sent


async def test_an_already_reversed_charge_409_is_shown_as_refunded(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    wallet: WalletInfo,
    asgi_client: TerminalClient,
) -> None:
    tx_id = await sale(services, sandbox, wallet, 2_000)
    await asgi_client.reverse(tx_id)  # e.g. from another till: the service now says 409
    async with host(first_poll_s=30).run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        dialog = pilot.app.screen
        assert isinstance(dialog, ReversalScreen)
        await pilot.press(*tx_id, "enter")
        await type_pin(pilot, PIN)
        await until(pilot, lambda: (dialog.outcome or "").startswith("Refunded"), "refunded")
        assert dialog.query_one("#answer").has_class("good")


async def test_unknown_and_malformed_ids_get_a_plain_reason(
    host: Callable[..., OwnerHost],
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> None:
    async with host(first_poll_s=30).run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        dialog = pilot.app.screen
        assert isinstance(dialog, ReversalScreen)
        await pilot.press(*"12345", "enter")
        await type_pin(pilot, PIN)
        await until(pilot, lambda: dialog.outcome is not None, "validated")
        assert dialog.outcome == "That is not a transaction id (tx_ followed by letters and digits)"
        dialog.query_one("#tx", Input).value = "tx_nosuchcharge1"
        dialog.query_one("#pin", Input).focus()
        await type_pin(pilot, PIN)
        await until(pilot, lambda: "no such transaction" in (dialog.outcome or ""), "404")


async def test_after_a_refund_enter_closes_the_dialog_and_never_asks_for_the_pin_again(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> None:
    wallet = sandbox.create_wallet(50_000)
    tx_id = await sale(services, sandbox, wallet, 2_000)
    async with host(first_poll_s=30).run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        dialog = pilot.app.screen
        assert isinstance(dialog, ReversalScreen)
        await pilot.press(*tx_id, "enter")
        await type_pin(pilot, PIN)
        await until(pilot, lambda: (dialog.outcome or "").startswith("Refunded"), "refunded")
        assert all(field.disabled for field in dialog.query(Input))
        assert "Enter or Esc" in str(dialog.query_one("#hint", Static).render())
        await pilot.press("enter")
        await until(pilot, lambda: pilot.app.screen is not dialog, "dialog closed")
        assert sandbox.transaction(tx_id).status == "REVERSED"


async def test_a_refund_typed_at_full_speed_puts_the_pin_in_the_pin_field(
    host: Callable[..., OwnerHost],
    services: KioskServices,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> None:
    """`2`, the id, Enter, the PIN, Enter, all queued at once: refunded, with no digit of
    the PIN in the id's field."""
    from textual import events

    wallet = sandbox.create_wallet(50_000)
    tx_id = await sale(services, sandbox, wallet, 3_000)
    async with host(first_poll_s=30).run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        dialog = pilot.app.screen
        assert isinstance(dialog, ReversalScreen)
        for key in [*tx_id, "enter", *PIN, "enter"]:
            pilot.app.post_message(events.Key(key, "\r" if key == "enter" else key))
        await until(pilot, lambda: (dialog.outcome or "").startswith("Refunded"), "refunded")
        assert dialog.query_one("#tx", Input).value == tx_id
        assert sandbox.transaction(tx_id).status == "REVERSED"
