"""The resolver's harder paths: crashes, history lookups, abandon, and the refund queue."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from qrpos import spec
from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    RefundRow,
    RetryPolicy,
    sales_sql,
    states,
)
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo
from qrpos.simulator.testing import asgi_transport


def charges(sandbox: Sandbox, wallet: WalletInfo) -> list[str]:
    return [
        tx.id
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet.wallet_id and tx.type is spec.TxType.CHARGE
    ]


def stored_before_a_crash(ledger: Ledger, token: str, amount: int) -> states.IntentRow:
    """The row a process leaves when it dies right after committing the intent."""

    def insert(conn: sqlite3.Connection) -> states.IntentRow:
        new_id = sales_sql.insert_intent(
            conn,
            idem_key="qrpos-crash-test",
            token=token,
            amount_mnt=amount,
            now=datetime.now(UTC).timestamp(),
        )
        row = sales_sql.get_intent(conn, new_id)
        assert row is not None
        return row

    row: states.IntentRow = ledger.write(insert)
    return row


async def test_crash_before_sending_is_recovered_by_sending_with_the_same_key(
    desk: ChargeDesk, ledger: Ledger, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    stored_before_a_crash(ledger, wallet.qr_token, 321)
    [result] = await desk.recover()
    assert result.state is IntentState.APPROVED
    assert len(charges(sandbox, wallet)) == 1


async def test_crash_after_the_service_committed_is_recovered_without_a_second_charge(
    desk: ChargeDesk,
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    wallet: WalletInfo,
) -> None:
    row = stored_before_a_crash(ledger, wallet.qr_token, 321)
    await asgi_client.charge(wallet.qr_token, 321, row.idem_key)  # reached; answer lost
    [result] = await desk.recover()
    assert result.state is IntentState.APPROVED and result.charged
    assert len(charges(sandbox, wallet)) == 1


async def test_two_candidates_in_history_go_to_review_never_a_guess(
    desk: ChargeDesk, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> None:
    sandbox.seed_charge(terminal.username, 800, datetime.now(UTC))
    sandbox.arm_fault("drop_after_commit")
    sandbox.arm_fault("forget_idempotency", count=2)
    result = await desk.charge(800, wallet.qr_token, deadline_s=5)
    assert result.state is IntentState.NEEDS_REVIEW and result.charged is None
    assert "2 matching charges" in (result.message or "")
    [review] = desk.listing.reviews()
    assert len(review.candidates) == 2
    # the seeded row was never sent by this outbox: another install holds the credentials
    assert review.reason == "foreign_activity"
    # it does not block the next sale, but it stays listed for a person
    assert [v.state for v in desk.listing.unresolved()] == ["needs_review"]
    other = sandbox.create_wallet(1000)
    assert (await desk.charge(5, other.qr_token, deadline_s=5)).charged is True


async def test_claimed_transaction_is_not_matched_to_a_second_sale(
    desk: ChargeDesk, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    first = await desk.charge(600, wallet.qr_token, deadline_s=5)
    second_wallet = sandbox.create_wallet(10_000)
    # the second sale of the same amount never commits; only the first is in the history
    sandbox.arm_fault("error_before_commit", count=10, operation="charge")
    second = await desk.charge(600, second_wallet.qr_token, deadline_s=5)
    assert first.charged is True
    assert second.state is IntentState.NOT_CHARGED and second.charged is False


async def test_abandoned_sale_found_charged_goes_to_a_person_who_refunds_it(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    """Issue 47: the row the window pairs with an abandoned sale may be another install's,
    so it is never refunded on that pairing; a person decides with it offered."""
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(max_sends=1))
    sandbox.arm_fault("error_after_commit")
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    sale = await desk.charge(2500, wallet.qr_token, deadline_s=0.3)
    assert sale.state is IntentState.UNRESOLVED
    abandoned = await desk.abandon(sale.intent_id)
    assert abandoned.state is IntentState.ABANDONED and abandoned.charged is None
    sandbox.clear_faults()
    [found] = await desk.recover()
    [tx_id] = charges(sandbox, wallet)
    assert found.state is IntentState.NEEDS_REVIEW, found
    assert sandbox.transaction(tx_id).status is spec.TxStatus.COMPLETED  # nothing refunded
    [review] = desk.listing.reviews()
    assert review.reason == "unconfirmed_row"
    assert [c.transaction.id for c in review.candidates] == [tx_id]
    result = await desk.settle_review(sale.intent_id, RefundRow(tx_id))
    assert result.state is IntentState.REFUNDED_PER_REVIEW, result
    assert sandbox.transaction(tx_id).status is spec.TxStatus.REVERSED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000
    # after the abandon nothing was sent again: one charge request in all
    assert [a["kind"] for a in desk.listing.audit(sale.intent_id)].count("charge") == 1


async def test_abandoned_sale_that_never_reached_the_service_is_not_charged(
    desk: ChargeDesk, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    sandbox.arm_fault("rate_limit", count=1000, retry_after=0)
    sale = await desk.charge(10, wallet.qr_token, deadline_s=0.2)
    result = await desk.abandon(sale.intent_id)
    assert result.charged is False
    assert charges(sandbox, wallet) == []


async def test_reversal_retries_5xx_and_409_counts_as_refunded(
    desk: ChargeDesk, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    sale = await desk.charge(900, wallet.qr_token, deadline_s=5)
    assert sale.transaction is not None
    sandbox.arm_fault("error_after_commit", count=1, operation="reverse")
    result = await desk.reverse(sale.transaction.id)
    assert result.state == "refunded" and "already reversed" in result.message
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000


async def test_reversal_of_unknown_tx_ends_with_the_service_reason(desk: ChargeDesk) -> None:
    result = await desk.reverse("tx_nosuchthing")
    assert result.state == "refused" and result.message == spec.ErrorText.TX_NOT_FOUND
    assert result.status == 404  # what callers branch on


async def test_reversal_held_on_401_resumes_after_repairing(
    desk: ChargeDesk,
    sandbox: Sandbox,
    sim_app: object,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    sale = await desk.charge(70, wallet.qr_token, deadline_s=5)
    assert sale.transaction is not None
    new_password = sandbox.rotate_password(terminal.username)
    held = await desk.reverse(sale.transaction.id)
    assert held.state == "credentials_rejected"
    desk.replace_client(
        TerminalClient(
            "http://127.0.0.1", terminal.username, new_password, transport=asgi_transport(sim_app)
        )
    )
    await desk.recover()
    assert sandbox.transaction(sale.transaction.id).status is spec.TxStatus.REVERSED
    assert desk.listing.unresolved() == []
