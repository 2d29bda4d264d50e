"""Issue 41, defect 1 on the owner's screen: a refund the service refused for a charged
sale the cashier abandoned is one of the owner's "payments to check", with its reason in
words, its charge offered as its row, and the owner refunds it again there (with the
manager PIN) once the service takes refunds.

The sale is made with the real `qrpos` commands against the sandbox on loopback (its
faults: 500s after commit, the history unreadable). Since issue 47 the kiosk refunds no
abandoned sale on the window's word: the history's row goes to the owner
(`unconfirmed_row`), who refunds it with `qrpos outbox review N --refund TX`, and the
service refuses that refund (403). The kiosk then opens the same outbox under Pilot.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kiosk_harness import FAST, Kiosk, make_services
from textual.widgets import DataTable

from headless import cli_environment, qrpos
from qrpos import manager_pin, spec
from qrpos.cli.common import EXIT_REFUSED
from qrpos.present.i18n import set_language, t
from qrpos.present.owner import review_reason
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp

MANAGER = "8642"
AMOUNT = 4500
#: the review reason agreed for issue 41
REFUND_REFUSED = "refund_refused"


def outbox(env: dict[str, str]) -> list[dict[str, Any]]:
    listed = qrpos(env, "outbox", "list", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    return rows


def sale_with_a_refused_refund(env: dict[str, str], sandbox: Sandbox) -> tuple[int, str, str]:
    """Committed, every reply lost, abandoned; the history's row goes to the owner
    (`unconfirmed_row`), who refunds it, and the service refuses the refund (403): the
    sale's id, its charge and its wallet."""
    warm = sandbox.create_wallet(10_000)
    assert qrpos(env, "charge", "--amount", "100", "--token", warm.qr_token).returncode == 0
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=1_000_000, operation="charge")
    sandbox.arm_fault("error_before_commit", count=1_000_000, operation="list")
    sale = qrpos(
        env, "charge", "--amount", str(AMOUNT), "--token", wallet.qr_token, "--deadline", "2"
    )
    assert sale.returncode == 3, sale.stdout + sale.stderr
    [row] = [r for r in outbox(env) if r["amountMNT"] == AMOUNT]
    assert qrpos(env, "outbox", "abandon", str(row["id"])).returncode == 0
    [charge] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    sandbox.clear_faults()
    sandbox.arm_fault("forbidden", count=1_000_000, operation="reverse")
    # the history answers: only the window ties its row to the abandoned sale, so the
    # kiosk refunds nothing and asks a person (once late commits had `settle_s`)
    qrpos(env, "outbox", "resolve", "--deadline", "20")
    [held] = [r for r in outbox(env) if r["id"] == row["id"]]
    assert held["state"] == "needs_review", held
    listed = qrpos(env, "outbox", "review", "--json")
    [review] = [r for r in json.loads(listed.stdout) if r["id"] == int(row["id"])]
    offered = [c["transactionID"] for c in review["candidates"]]
    assert (review["reason"], offered) == ("unconfirmed_row", [charge.id]), review
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - AMOUNT  # not refunded
    # the owner saw the customer pay and leave: refund the row; the service refuses it
    refund = qrpos(env, "outbox", "review", str(row["id"]), "--refund", charge.id)
    assert refund.returncode == EXIT_REFUSED, refund.stdout + refund.stderr
    [held] = [r for r in outbox(env) if r["id"] == row["id"]]
    assert (held["state"], held["charged"]) == ("needs_review", True), held
    assert sandbox.transaction(charge.id).status is spec.TxStatus.COMPLETED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - AMOUNT  # not refunded
    return int(row["id"]), charge.id, wallet.wallet_id


async def test_the_owner_sees_a_refused_refund_and_refunds_it_again(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    env = cli_environment(tmp_path, live_url, terminal)
    sale, tx_id, wallet_id = sale_with_a_refused_refund(env, sandbox)
    state = Path(env["QRPOS_STATE_DIR"])
    manager_pin.set_pin(state, MANAGER)
    services, ledger = make_services(state, live_url, terminal)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    set_language("en")
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
            await kiosk.on_screen("AmountScreen", timeout=20)
            await pilot.press("f2")
            await kiosk.on_screen("OwnerMenuScreen")
            await pilot.press("4")
            await kiosk.on_screen("ReviewsScreen")
            screen: Any = app.screen
            reviews: DataTable[str] = screen.query_one("#reviews", DataTable)
            await kiosk.until(lambda: reviews.row_count > 0 or screen.reviews == {}, 10)
            await pilot.pause(0.2)
            assert sale in screen.reviews, (
                f"sale #{sale} is not among the owner's payments to check: "
                f"{sorted(screen.reviews)}; {kiosk.text('#state')}"
            )
            assert screen.reviews[sale].reason == REFUND_REFUSED
            words = review_reason(REFUND_REFUSED)
            assert words != REFUND_REFUSED  # the catalogue has its words
            assert str(reviews.get_row(str(sale))[3]) == words
            candidates: DataTable[str] = screen.query_one("#candidates", DataTable)
            await kiosk.until(lambda: candidates.row_count > 0)
            assert str(candidates.get_row(tx_id)[2]) == tx_id
            # the service takes refunds again; the owner refunds the row, with the PIN
            sandbox.clear_faults()
            candidates.move_cursor(row=candidates.get_row_index(tx_id))
            await pilot.press("r")
            await pilot.press(*MANAGER, "enter")
            done = t("review.done_refund", sale=sale)
            await kiosk.until(lambda: screen.outcome == done, timeout=15)
            await kiosk.until(lambda: sale not in screen.reviews)
    finally:
        set_language("mn")
        ledger.close()
    [charge] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet_id]
    assert charge.status is spec.TxStatus.REVERSED
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000
    [ended] = [r for r in outbox(env) if r["kind"] == "charge" and r["id"] == str(sale)]
    assert (ended["state"], ended["transactionID"]) == ("refunded_per_review", tx_id), ended
