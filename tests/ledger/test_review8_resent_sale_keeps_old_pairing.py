"""Review 8 (fixed): a sale that never reached the service under the old pairing and is sent under
the new one after a re-pairing keeps the old pairing's name; if that send's reply is lost,
the sale goes to an `other_terminal` review ("sent as T1") although its row is in the
new terminal's history, where the look-up would have proven it.

`charge_intent.username` is written once, when the sale is stored (`ChargeDesk.charge`),
and `resolver.drive` sends a sale that was never `maybe_sent` under whatever pairing the
kiosk has now, without writing the new one. Once that send is unclear, `maybe_sent` and
the stored username T1 send the sale to `_paired_elsewhere`: a person is told to read T1's
dashboard, which never saw the charge; the review offers no row. (The same stale name
makes the day's report drop the sale: test_review8_report_sale_resent_after_repairing.)

Story (sandbox over real HTTP, the real desk): sale B's sends under T1 are turned away
with 429s (nothing reached the service); the kiosk is re-paired to T2; B is sent under T2,
commits, and the reply is lost (500 after commit); B is resolved under T2: T2's history
shows the row and the key's replay confirms it (never a review naming T1).
"""

from __future__ import annotations

import json
from pathlib import Path

from headless import cli_environment, qrpos
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.service.models import Transaction
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

AMOUNT = 6000


async def test_a_sale_resent_under_the_new_pairing_is_proven_in_its_history(
    ledger: Ledger,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    policy = RetryPolicy.testing(max_sends=1000, sleep=True)
    async with TerminalClient(live_url, terminal.username, terminal.password) as t1:
        desk = ChargeDesk(ledger, t1, policy=policy)
        sandbox.arm_fault("rate_limit", count=10**6, operation="charge", retry_after=0.3)
        held = await desk.charge(AMOUNT, wallet.qr_token, deadline_s=1.0)
        assert held.is_open, held
    assert sandbox.transactions() == []
    sandbox.clear_faults()
    t2_terminal = sandbox.create_terminal("m_demo")
    async with TerminalClient(live_url, t2_terminal.username, t2_terminal.password) as t2:
        desk = ChargeDesk(ledger, t2, policy=policy)
        # sent under T2: it commits, and the reply is lost; the history then shows the row
        # in T2's window, and the key's next send (a replay) confirms it
        sandbox.arm_fault("error_after_commit", count=1, operation="charge")
        after = await desk.resolve(held.intent_id, deadline_s=10)
        [tx] = sandbox.transactions()
        assert tx.wallet_id == wallet.wallet_id
        assert [t.id for t in await _history(t2)] == [tx.id]  # in T2's history
        assert after.state is not IntentState.NEEDS_REVIEW, after
        assert after.charged and after.transaction is not None, after
        assert after.transaction.id == tx.id, after


async def _history(client: TerminalClient) -> list[Transaction]:
    return [tx async for tx in client.iter_transactions()]


def test_the_same_through_the_commands_a_person_runs(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    """`qrpos charge` whose every send under T1 gets a 429 (kept, exit 3); the installer
    re-pairs the kiosk to T2 (its username and password: `cli_environment`); the sale's
    send under T2 commits and its reply is lost; `qrpos outbox resolve` proves it in T2's
    history (the key's replay), never a review naming T1."""
    wallet = sandbox.create_wallet(10_000)
    t1_env = cli_environment(tmp_path, live_url, terminal)
    sandbox.arm_fault("rate_limit", count=10**6, operation="charge", retry_after=0.3)
    held = qrpos(
        t1_env, "charge", "--amount", str(AMOUNT), "--token", wallet.qr_token, "--deadline", "1"
    )
    assert held.returncode == 3, held.stderr  # kept: nothing reached the service
    assert sandbox.transactions() == []
    sandbox.clear_faults()
    t2_env = cli_environment(tmp_path, live_url, sandbox.create_terminal("m_demo"))
    assert t2_env["QRPOS_STATE_DIR"] == t1_env["QRPOS_STATE_DIR"]  # the same kiosk
    sandbox.arm_fault("error_after_commit", count=1, operation="charge")
    resolved = qrpos(t2_env, "outbox", "resolve", "--deadline", "10")
    [tx] = sandbox.transactions()
    assert tx.wallet_id == wallet.wallet_id
    listed = qrpos(t2_env, "outbox", "list", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["state"] != "needs_review", (row, resolved.stdout, resolved.stderr)
    assert (row["charged"], row["transactionID"]) == (True, tx.id), row
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
