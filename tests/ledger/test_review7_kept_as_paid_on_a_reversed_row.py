"""Review 7: "keep as paid" is accepted on a row the history lists REVERSED, and the
shift then counts the refunded money as a sale kept, for ever.

`reviews._checked_candidate` checks a decision's row against the review's rows (or a
named row's form, owner, amount, type) and `reviews.decide` refuses "keep as paid" only
while *this outbox* refunds the row (`refunds_sql.reversal_for_tx`). A row reversed
elsewhere (the merchant's dashboard; another till on the same credentials: the contract
lets any terminal of the merchant reverse it) is offered in a `reversed_row` review with
its status REVERSED, yet `MarkCharged` on it ends the sale `charged_per_review`, sold:
`money.money_of` says charged (no local refund of it exists), the X and the Z count it in
`sales`, and no later Z corrects it (`shifts_sql._MOVED_SQL` looks only at local refunds).
The service lists the row REVERSED: the shift's books and the day's end disagree by the
sale's amount. docs/ledger.md: a `reversed_row` review "is closed by refunding the row".

Story (sandbox over real HTTP, the real desk and shifts): sale B commits X, every reply
lost and the history unreadable; the customer is refunded from the dashboard (X
REVERSED); B's key may no longer be sent; the history answers: B is in review
(`reversed_row`, X offered, REVERSED). The owner chooses "keep as paid". Fixed: refused
("reversed on the service ... refund it to close the sale", `error.review_reversed`); the
sale stays in review.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from headless import cli_environment, qrpos
from qrpos import spec
from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    MarkCharged,
    RetryPolicy,
    ReviewRefused,
    sales_sql,
)
from qrpos.ledger.shifts import add_cashier, figures, open_shift
from qrpos.manager_pin import pin_record
from qrpos.service import Refunded, TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials

AMOUNT = 4500
MANY = 10**6
HORIZON_S = 1.0


async def test_keep_as_paid_is_refused_on_a_row_the_history_lists_reversed(
    tmp_path: Path,
    ledger: Ledger,
    http_client: TerminalClient,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> None:
    at = datetime.now(UTC)
    shift = open_shift(ledger, add_cashier(ledger, "Bat", pin_record("1111"), at=at), at=at)
    policy = RetryPolicy.testing(resend_horizon_s=HORIZON_S, settle_s=0.3, sleep=True)
    desk = ChargeDesk(ledger, http_client, policy=policy, jitter=lambda: 1.0)
    warm = await desk.charge(100, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    assert warm.charged
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=MANY, operation="charge")
    sandbox.arm_fault("error_before_commit", count=MANY, operation="list")
    sale = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=0.5)
    assert sale.is_open, sale
    [tx] = [t for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]
    # the customer is refunded from the merchant's dashboard (any terminal of the merchant)
    dashboard = sandbox.create_terminal("m_demo")
    async with TerminalClient(live_url, dashboard.username, dashboard.password) as other:
        assert isinstance(await other.reverse(tx.id), Refunded)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000
    await asyncio.sleep(HORIZON_S + 0.3)  # B's key may no longer be sent
    sandbox.clear_faults()
    sandbox.arm_fault("error_after_commit", count=MANY, operation="charge")
    after = sale
    for _ in range(40):
        after = await desk.resolve(sale.intent_id, deadline_s=5)
        if not after.is_open:
            break
        await asyncio.sleep(0.05)
    assert after.state is IntentState.NEEDS_REVIEW, after
    [review] = desk.listing.reviews()
    assert [(c.transaction.id, c.transaction.status) for c in review.candidates] == [
        (tx.id, spec.TxStatus.REVERSED)
    ], review

    # refused, saying why: the owner refunds the row (a 409 "already reversed" lands it)
    with pytest.raises(ReviewRefused) as refused:
        await desk.settle_review(sale.intent_id, MarkCharged(tx.id))
    assert refused.value.said is not None, refused.value
    assert refused.value.said.key == "error.review_reversed", refused.value
    x = figures(ledger, shift.id)
    assert sandbox.transaction(tx.id).status is spec.TxStatus.REVERSED
    # the wallet holds its money; the shift does not count it kept
    assert x.sales_mnt == 100, x
    still = ledger.read(lambda c: sales_sql.get_intent(c, sale.intent_id))
    assert still is not None and still.state is IntentState.NEEDS_REVIEW, still

    # and through the command an owner types (`qrpos outbox review N --charged TX`, the
    # same outbox): refused with the reason, non-zero, nothing changed
    env = cli_environment(tmp_path, live_url, terminal)
    typed = await asyncio.to_thread(
        qrpos, env, "outbox", "review", str(sale.intent_id), "--charged", tx.id
    )
    assert typed.returncode != 0, typed.stdout + typed.stderr
    assert "reversed on the service" in typed.stdout + typed.stderr, typed
    still = ledger.read(lambda c: sales_sql.get_intent(c, sale.intent_id))
    assert still is not None and still.state is IntentState.NEEDS_REVIEW, still
    assert figures(ledger, shift.id).sales_mnt == 100
