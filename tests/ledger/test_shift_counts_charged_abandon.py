"""Issue 47, defect 3: a shift's X and Z count an abandoned sale proven charged as
charged while its refund has not landed, and a later Z corrects an earlier one whose
sale's money moved since, so that the Zs with their corrections are the books.

A sale is committed, its reply lost, and the cashier abandons it; the history then proves
the charge and the kiosk queues its refund, which the service answers 5xx (it stalls).
The customer's wallet holds the money: the X and the Z count it charged, refund pending.
Then either the refund is refused (403) and the owner keeps the sale as paid (no change:
the Z already counted it charged), or the refund lands (the next Z corrects the earlier
Z's sale: charged, refunded since). Either way the Zs and their corrections add up to the
service's own rows of this terminal.

All of it through the real `qrpos` commands against the sandbox over loopback HTTP. On
the code before the fix the X counts the sale "not charged" and no Z ever corrects it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from headless import fed, qrpos
from qrpos import spec
from qrpos.simulator import Sandbox

AMOUNT = 4500
WARM = 100
PIN = "135792468013"


def outbox(env: dict[str, str]) -> list[dict[str, Any]]:
    out = qrpos(env, "outbox", "list", "--all", "--json")
    assert out.returncode == 0, out.stderr
    rows: list[dict[str, Any]] = json.loads(out.stdout)
    return rows


def x_report(env: dict[str, str]) -> dict[str, Any]:
    out = qrpos(env, "shift", "x", "--json")
    assert out.returncode == 0, out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def take_z(env: dict[str, str]) -> dict[str, Any]:
    out = fed(env, f"{PIN}\n", "shift", "close", "--pin-stdin", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def books(sandbox: Sandbox, tx_ids: set[str]) -> tuple[int, int]:
    """The service's own rows of these charges: (kept, reversed) amounts."""
    rows = [tx for tx in sandbox.transactions() if tx.id in tx_ids]
    kept = sum(tx.amount_mnt for tx in rows if tx.status is spec.TxStatus.COMPLETED)
    gone = sum(tx.amount_mnt for tx in rows if tx.status is spec.TxStatus.REVERSED)
    return kept, gone


@pytest.mark.parametrize("then", ["refused_and_kept", "refund_lands"])
def test_a_charged_abandon_counts_charged_and_a_late_outcome_is_corrected(
    cli_env: dict[str, str], sandbox: Sandbox, then: str
) -> None:
    env = cli_env
    assert fed(env, f"{PIN}\n", "cashier", "add", "Bat", "--pin-stdin").returncode == 0
    assert fed(env, f"{PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    warm = sandbox.create_wallet(10_000)  # the terminal id and the service's clock are known
    assert qrpos(env, "charge", "--amount", str(WARM), "--token", warm.qr_token).returncode == 0

    # committed at once; its reply, and every retry's, a 500; the history unreadable
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=1000, operation="charge")
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    sale = qrpos(
        env, "charge", "--amount", str(AMOUNT), "--token", wallet.qr_token, "--deadline", "2"
    )
    assert sale.returncode == 3, sale.stdout + sale.stderr
    row = next(r for r in outbox(env) if r["amountMNT"] == AMOUNT)
    intent = int(row["id"])
    assert qrpos(env, "outbox", "abandon", str(intent)).returncode == 0
    # the history answers: a row of its amount in its window, which only the window ties to
    # the sale (issue 47: another install's would look the same), so a person decides; the
    # owner, who saw the customer pay, refunds it from the review, and the refund stalls
    sandbox.clear_faults()
    sandbox.arm_fault("error_before_commit", count=1000, operation="reverse")
    # (a review opens once late commits had `settle_s` after the last unclear request)
    qrpos(env, "outbox", "resolve", "--deadline", "20")
    sale_row = next(r for r in outbox(env) if r["id"] == row["id"])
    assert sale_row["state"] == "needs_review", sale_row
    [tx_id] = [tx.id for tx in sandbox.transactions() if tx.amount_mnt == AMOUNT]
    refund = fed(env, f"{PIN}\n", "outbox", "review", str(intent), "--refund", tx_id)
    assert refund.returncode == 3, refund.stdout + refund.stderr  # settled, refund queued
    sale_row = next(r for r in outbox(env) if r["id"] == row["id"])
    assert sale_row["state"] == "refunded_per_review" and sale_row["charged"] is True, sale_row
    refunds = [r for r in outbox(env) if r["kind"] == "reversal"]
    assert [(r["transactionID"], r["state"]) for r in refunds] == [(tx_id, "pending")]
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - AMOUNT
    mine = {tx.id for tx in sandbox.transactions() if tx.amount_mnt in (WARM, AMOUNT)}
    assert books(sandbox, mine) == (WARM + AMOUNT, 0)

    # X and Z: the wallet holds the money, so the shift counts it charged, refund pending
    x = x_report(env)
    assert (x["sales"], x["sales_mnt"], x["not_charged"]) == (2, WARM + AMOUNT, 0), x
    assert [s["intent"] for s in x["held"]] == [intent], x
    text = qrpos(env, "shift", "x")
    assert f"charged, refund pending: sale #{intent}" in text.stdout, text.stdout
    z1 = take_z(env)
    assert (z1["sales"], z1["sales_mnt"], z1["not_charged"]) == (2, WARM + AMOUNT, 0), z1
    assert [s["intent"] for s in z1["held"]] == [intent], z1
    assert z1["reconciliation"]["done"] and z1["reconciliation"]["matched"] == 2, z1

    # the next shift: the refund's outcome comes
    assert fed(env, f"{PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    sandbox.clear_faults()
    if then == "refused_and_kept":
        sandbox.arm_fault("forbidden", count=1000, operation="reverse")
        # (the refund's backoff after the 500s of the first resolve runs its course)
        qrpos(env, "outbox", "resolve", "--deadline", "30")
        assert next(r for r in outbox(env) if r["id"] == row["id"])["state"] == "needs_review"
        kept = qrpos(env, "outbox", "review", str(row["id"]), "--charged", tx_id)
        assert kept.returncode == 0, kept.stdout + kept.stderr
        expected = (WARM + AMOUNT, 0)
    else:
        # (the refund's backoff after the 500s of the first resolve runs its course)
        qrpos(env, "outbox", "resolve", "--deadline", "30")
        sale_row = next(r for r in outbox(env) if r["id"] == row["id"])
        assert sale_row["state"] == "refunded_per_review", sale_row
        refunds = [r for r in outbox(env) if r["kind"] == "reversal"]
        assert [(r["transactionID"], r["state"]) for r in refunds] == [(tx_id, "refunded")]
        expected = (WARM, AMOUNT)
    assert books(sandbox, mine) == expected
    z2 = take_z(env)
    if then == "refused_and_kept":
        assert z2["corrections"] == [], z2  # Z 1 said charged: it is, and kept
    else:
        [fix] = z2["corrections"]
        assert (fix["intent"], fix["of_z"], fix["was"], fix["now"]) == (
            intent,
            1,
            "charged",
            "refunded",
        )
        assert (fix["sales_mnt"], fix["reversed_mnt"]) == (-AMOUNT, AMOUNT)
        shown = qrpos(env, "shift", "z", "2")
        assert f"correction: sale #{intent} of Z 1" in shown.stdout, shown.stdout
        assert "charged → now charged, refunded since" in shown.stdout, shown.stdout
    # the Zs with their corrections are the books
    zs = [z1, z2]
    fixes = [c for z in zs for c in z["corrections"]]
    sold = sum(z["sales_mnt"] for z in zs) + sum(c["sales_mnt"] for c in fixes)
    gone = sum(z["reversed_mnt"] for z in zs) + sum(c["reversed_mnt"] for c in fixes)
    assert (sold, gone) == expected
    # a third Z corrects nothing again
    assert fed(env, f"{PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    assert take_z(env)["corrections"] == []
