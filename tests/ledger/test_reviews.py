"""A person settles a review: checked against its rows, audited, refunds through the queue.

Also `qrpos outbox review` headless and the `qrpos doctor` line about another install.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from headless import qrpos
from qrpos import spec
from qrpos.doctor import Status, check_other_install, other_install_fix
from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    MarkCharged,
    MarkNotCharged,
    RefundRow,
    RetryPolicy,
    ReviewRefused,
    SaleResult,
)
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo


async def contested_pair(desk: ChargeDesk, sandbox: Sandbox) -> tuple[int, int, str, WalletInfo]:
    """Sale A (abandoned, never charged) and sale B (charged, reply lost, 409 on retry),
    both in review over B's row. Returns (A, B, B's tx id, B's wallet)."""
    a_wallet, b_wallet = sandbox.create_wallet(10_000), sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_before_commit", count=2, operation="charge")
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    a = await desk.charge(700, a_wallet.qr_token, deadline_s=0.5)
    sandbox.clear_faults()
    await desk.abandon(a.intent_id)
    sandbox.arm_fault("drop_after_commit", operation="charge")
    sandbox.arm_fault("forget_idempotency", count=2, operation="charge")
    b = await desk.charge(700, b_wallet.qr_token, deadline_s=5)
    await desk.recover()
    [tx] = [t.id for t in sandbox.transactions() if t.wallet_id == b_wallet.wallet_id]
    assert {int(r.intent.id) for r in desk.listing.reviews()} == {a.intent_id, b.intent_id}
    return a.intent_id, b.intent_id, tx, b_wallet


@pytest.fixture
def review_desk(ledger: Ledger, asgi_client: TerminalClient) -> ChargeDesk:
    return ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(max_sends=2))


async def test_marking_the_row_charged_settles_one_sale_and_the_rival_cannot_take_it(
    review_desk: ChargeDesk, sandbox: Sandbox
) -> None:
    a, b, tx, _ = await contested_pair(review_desk, sandbox)
    done = await review_desk.settle_review(b, MarkCharged(tx), actor="owner:test")
    assert done.state is IntentState.CHARGED_PER_REVIEW and done.charged is True
    assert done.transaction is not None and done.transaction.id == tx
    with pytest.raises(ReviewRefused, match="belongs to sale"):
        await review_desk.settle_review(a, MarkCharged(tx))
    settled = await review_desk.settle_review(a, MarkNotCharged())
    assert settled.state is IntentState.NOT_CHARGED and settled.charged is False
    assert review_desk.listing.reviews() == []
    [entry] = [e for e in review_desk.listing.audit(b) if e["kind"] == "review"]
    assert "owner:test" in entry["detail"] and tx in entry["detail"]
    assert entry["sent_at"] is not None


async def test_refunding_the_row_goes_through_the_reversal_queue(
    review_desk: ChargeDesk, sandbox: Sandbox
) -> None:
    _, b, tx, wallet = await contested_pair(review_desk, sandbox)
    done = await review_desk.settle_review(b, RefundRow(tx))
    assert done.state is IntentState.REFUNDED_PER_REVIEW
    assert sandbox.transaction(tx).status is spec.TxStatus.REVERSED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000
    refund = review_desk.listing.refund_of(tx)
    assert refund is not None and refund.state == "refunded"


async def test_a_row_that_is_not_a_candidate_is_refused_and_nothing_changes(
    review_desk: ChargeDesk, sandbox: Sandbox
) -> None:
    _, b, _, _ = await contested_pair(review_desk, sandbox)
    before = review_desk.listing.reviews()
    # a row not offered may be named, but this terminal's history, which the kiosk can
    # read, does not hold it
    for decision in (MarkCharged("tx_notacandidate"), RefundRow("tx_notacandidate")):
        with pytest.raises(ReviewRefused, match="not in this terminal's history"):
            await review_desk.settle_review(b, decision)
    assert review_desk.listing.reviews() == before
    assert sandbox.transactions()[-1].status is spec.TxStatus.COMPLETED


async def test_a_sale_not_in_review_cannot_be_settled_as_one(
    review_desk: ChargeDesk, wallet: WalletInfo
) -> None:
    approved: SaleResult = await review_desk.charge(100, wallet.qr_token, deadline_s=5)
    with pytest.raises(ReviewRefused, match="not waiting for a review"):
        await review_desk.settle_review(approved.intent_id, MarkNotCharged())


# --- headless ---------------------------------------------------------------------------


async def test_outbox_review_lists_and_settles_headless(
    cli_env: dict[str, str], tmp_path: Path, asgi_client: TerminalClient, sandbox: Sandbox
) -> None:
    ledger = Ledger.open(tmp_path / "state" / "outbox.sqlite3")
    try:
        desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(max_sends=2))
        a, b, tx, wallet = await contested_pair(desk, sandbox)
    finally:
        ledger.close()
    listed = qrpos(cli_env, "outbox", "review")
    assert listed.returncode == 3, listed.stderr
    assert f"sale #{a}" in listed.stdout and f"sale #{b}" in listed.stdout
    assert tx in listed.stdout and "another sale could own the payment" in listed.stdout
    assert "…" + wallet.qr_token[-4:] in listed.stdout and wallet.qr_token not in listed.stdout
    rows = json.loads(qrpos(cli_env, "outbox", "review", "--json").stdout)
    assert {r["id"] for r in rows} == {a, b}
    assert [c["transactionID"] for c in rows[0]["candidates"]] == [tx]
    refused = qrpos(cli_env, "outbox", "review", str(a), "--charged", "tx_nope")
    assert refused.returncode == 2 and "not in this terminal's history" in refused.stderr
    refunded = qrpos(cli_env, "outbox", "review", str(b), "--refund", tx)
    assert refunded.returncode == 0, refunded.stderr
    assert sandbox.transaction(tx).status is spec.TxStatus.REVERSED
    assert qrpos(cli_env, "outbox", "review", str(a), "--not-charged").returncode == 0
    done = qrpos(cli_env, "outbox", "review")
    assert done.returncode == 0 and "No payment waits" in done.stdout
    usage = qrpos(cli_env, "outbox", "review", str(a))
    assert usage.returncode == 64
    assert "exit codes" in qrpos(cli_env, "outbox", "review", "--help").stdout


async def test_doctor_names_another_install_and_the_fix_until_cleared(
    desk: ChargeDesk,
    ledger: Ledger,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    english: None,
) -> None:
    assert check_other_install(ledger.path).status is Status.OK
    sandbox.seed_charge(terminal.username, 999, datetime.now(UTC))  # not ours
    sandbox.arm_fault("drop_after_commit", count=6, operation="charge")
    await desk.charge(250, sandbox.create_wallet(1000).qr_token, deadline_s=5)
    check = check_other_install(ledger.path)
    assert check.status is Status.FAIL and "1 charge since" in check.detail
    assert check.fix == other_install_fix() and "rotate" in check.fix and "re-pair" in check.fix
    desk.clear_foreign_activity()
    assert check_other_install(ledger.path).status is Status.OK
