"""Review 3 of issue 47: a 409 "qr token already used" to the sale's key lets the rows
decide (`timing.match_rule` "decide"), on the premise that the token was spent by this
sale's own earlier send. Another install on the same credentials breaks that premise.

Story (sandbox in-process): the sale's sends are answered 500 before anything commits
(never charged; the till keeps the sale open); the customer, tired of waiting, shows the
same QR at the canteen's other till, a second install on the same credentials, which
charges it the same price (row Y). The kiosk's next send of its key gets 409 "qr token
already used", and Y, alone in the sale's window, is "proven" the sale's own: the sale
ended charged per history on the other till's row, and the customer left with two meals
for one charge. The truth the kiosk can know is "unknown": a person decides (the window
pairs Y with the sale and the other install is invisible). Fixed: after such a 409 a row
the window pairs goes to a person (`unconfirmed_row`); absence still proves "not charged".
"""

from __future__ import annotations

from ledger_stories import token_spent_at_the_other_till, until_closed

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, WalletInfo

AMOUNT = 6000


def _policy() -> RetryPolicy:
    return RetryPolicy.testing(max_sends=3, settle_s=0.3, lookup_interval_s=0.02, sleep=True)


async def test_a_token_spent_at_another_install_never_makes_its_row_the_sales(
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    other_till: TerminalClient,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=_policy())
    held, theirs = await token_spent_at_the_other_till(desk, sandbox, other_till, wallet, AMOUNT)
    after = await until_closed(desk, held.intent_id, held)
    audit = [(a["kind"], a["outcome"]) for a in desk.listing.audit(held.intent_id)]
    assert ("charge", "TokenUsed") in audit or any("409" in str(a) for a in audit), audit
    # the other till's row is never this sale's payment
    assert after.transaction is None or after.transaction.id != theirs, (after, audit)
    assert after.state is IntentState.NEEDS_REVIEW, (after, audit)
