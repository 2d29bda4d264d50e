"""Review 7: an open sale whose key can no longer speak, paired by the window alone with
another install's row that the owner is refunding by hand, is made "charged".

`lookup._judged` sends a window-only proof to a person as `unconfirmed_row` (charged
unknown: the row may be another install's, issue 47) only while the verdict is still a
`Proven`. `refund_queue.held_by_hand` runs first and, for an open sale (pending,
unresolved), turns a proof on a row a refund made by hand holds into a `Disputed`
(`reversed_row`) with the event `lookup_proven_refunded_row`, whose cell says
`charged: yes`. So the match rule is skipped, and a sale that was never charged is
written `charged = 1` on a stranger's row. (Review 3 closed this door for an abandoned
sale only; docs/ledger.md says a window pairing on a row refunded by hand "goes to a
person, never ... counted charged on it".)

Story (sandbox over real HTTP): sale B's every send fails before anything commits (never
charged: its wallet untouched); another install on the same credentials charges another
wallet B's price inside B's window (row X); the customer of that till asks, and the owner
refunds X by hand at this kiosk (`qrpos reverse X`), which stalls on 5xx; B's resend
horizon passes (its key may no longer be sent). The kiosk resolves B.

What the cashier and the owner see on main: `qrpos charge`'s exit code for B is 0
("approved"), the shift's X counts B in its sales (held), and the owner cannot settle
B's review to the truth: "not charged" is refused ("proven charged"). Fixed: the match
rule sends the window pairing to a person (`unconfirmed_row`, charged unknown) before a
refund made by hand is weighed.
"""

from __future__ import annotations

import asyncio

from ledger_stories import stranger_row, until_closed

from qrpos.cli.charge import exit_code
from qrpos.cli.common import EXIT_OK
from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    MarkNotCharged,
    RetryPolicy,
    ReviewRefused,
    sales_sql,
)
from qrpos.ledger.money import Money, money_of
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

AMOUNT = 6000
MANY = 10**6
HORIZON_S = 1.5


def _policy() -> RetryPolicy:
    return RetryPolicy.testing(
        max_sends=3,
        settle_s=0.3,
        lookup_interval_s=0.02,
        sleep=True,
        resend_horizon_s=HORIZON_S,
    )


async def test_an_open_sale_is_never_charged_on_a_strangers_row_refunded_by_hand(
    ledger: Ledger,
    http_client: TerminalClient,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, http_client, policy=_policy(), jitter=lambda: 1.0)
    warm = await desk.charge(100, sandbox.create_wallet(10_000).qr_token, deadline_s=5)
    assert warm.charged  # the terminal id and the service's clock are known
    # B: every send fails before anything commits; the history cannot be read
    sandbox.arm_fault("error_before_commit", count=MANY, operation="charge")
    sandbox.arm_fault("error_before_commit", count=MANY, operation="list")
    held = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=0.5)
    assert held.is_open, held
    sandbox.clear_faults()
    # within B's window another install charges another wallet B's price
    tx_id = await stranger_row(live_url, terminal, sandbox, AMOUNT)
    # its customer asks; the owner refunds X by hand at this kiosk: it stalls on 5xx
    sandbox.arm_fault("error_before_commit", count=MANY, operation="reverse")
    by_hand = await desk.reverse(tx_id, deadline_s=0.5)
    assert by_hand.state == "unresolved", by_hand
    await asyncio.sleep(HORIZON_S + 0.5)  # B's key may no longer be sent
    after = await until_closed(desk, held.intent_id, held)

    # B's customer was never charged
    assert not [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == wallet.balance_mnt
    row = ledger.read(lambda c: sales_sql.get_intent(c, held.intent_id))
    assert row is not None
    assert after.state is IntentState.NEEDS_REVIEW, after
    wrong: list[str] = []
    # the cashier is not told "paid" (exit 0) on another install's row
    if exit_code(after) == EXIT_OK:
        wrong.append(f"qrpos charge exits {EXIT_OK} (approved), charged={after.charged}")
    # the shift does not count a never-charged sale in its sales
    if money_of(row.state, row.charged, False) is Money.CHARGED:
        wrong.append("the shift's X counts it charged (held)")
    # and the owner can settle it to the truth
    try:
        done = await desk.settle_review(held.intent_id, MarkNotCharged())
        if done.state is not IntentState.NOT_CHARGED:
            wrong.append(f"'not charged' left it {done.state}")
    except ReviewRefused as exc:
        wrong.append(f"'not charged' refused: {exc}")
    assert not wrong, wrong
