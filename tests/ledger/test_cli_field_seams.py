"""The field's seams through the real `qrpos` commands, over loopback HTTP to the sandbox
with its faults: re-pairing, a reply that does not match its sale, abandoning a sale in
review, and a same-price sale after it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from headless import cli_environment, qrpos
from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials


def charged(sandbox: Sandbox, wallet_id: str) -> list[str]:
    return [
        tx.id
        for tx in sandbox.transactions()
        if tx.wallet_id == wallet_id and tx.type is spec.TxType.CHARGE
    ]


def repaired(tmp_path: Path, env: dict[str, str], other: TerminalCredentials) -> dict[str, str]:
    """The same kiosk (state dir) paired as another terminal (username and credential)."""
    (tmp_path / "repaired").mkdir(exist_ok=True)
    fresh = cli_environment(tmp_path / "repaired", env["QRPOS_BASE_URL"], other)
    return {**fresh, "QRPOS_STATE_DIR": env["QRPOS_STATE_DIR"]}


def test_repairing_to_another_terminal_keeps_sales_approved_and_old_ones_for_a_person(
    tmp_path: Path, cli_env: dict[str, str], sandbox: Sandbox
) -> None:
    first = sandbox.create_wallet(10_000)
    ok = qrpos(cli_env, "charge", "--amount", "500", "--token", first.qr_token)
    assert ok.returncode == 0, ok.stderr  # the first terminal's id is learned
    # a sale whose reply is lost, and the history out of reach, until the re-pairing
    lost = sandbox.create_wallet(10_000)
    sandbox.arm_fault("drop_after_commit", count=20, operation="charge")
    sandbox.arm_fault("error_before_commit", count=200, operation="list")
    open_sale = qrpos(
        cli_env, "charge", "--amount", "700", "--token", lost.qr_token, "--deadline", "3"
    )
    assert open_sale.returncode == 3, open_sale.stderr  # kept, unresolved
    sandbox.clear_faults()
    env = repaired(tmp_path, cli_env, sandbox.create_terminal("m_demo"))
    resolved = qrpos(env, "outbox", "resolve")
    review = qrpos(env, "outbox", "review")
    assert "other_terminal" in review.stdout or "another pairing" in review.stdout, (
        resolved.stdout + resolved.stderr + review.stdout
    )
    listed = json.loads(qrpos(env, "outbox", "list", "--all", "--json").stdout)
    old = next(r for r in listed if r["amountMNT"] == 700)
    assert old["state"] == "needs_review" and old["charged"] is None
    # charged once, under the first terminal; its key never went out under the second
    assert len(charged(sandbox, lost.wallet_id)) == 1
    # new sales under the new pairing are approved, not sent to review
    for amount in (500, 900):
        wallet = sandbox.create_wallet(10_000)
        done = qrpos(env, "charge", "--amount", str(amount), "--token", wallet.qr_token)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["amountMNT"] == amount


def test_a_sale_in_review_stays_in_review_when_abandoned(
    cli_env: dict[str, str], sandbox: Sandbox
) -> None:
    """`qrpos outbox abandon` on a sale in review leaves it in the review list: its charge
    is real and must stay owned by something until a person settles it."""
    warm = sandbox.create_wallet(10_000)
    assert qrpos(cli_env, "charge", "--amount", "100", "--token", warm.qr_token).returncode == 0
    # another install charges 700 with these credentials, and this kiosk's 700 loses its
    # reply and its key: two rows, one sale: another install, a review
    sandbox.seed_charge(cli_env["QRPOS_USERNAME"], 700, datetime.now(UTC))
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("drop_after_commit", count=1, operation="charge")
    sandbox.arm_fault("forget_idempotency", count=5)
    sale = qrpos(cli_env, "charge", "--amount", "700", "--token", wallet.qr_token)
    listed = json.loads(qrpos(cli_env, "outbox", "list", "--all", "--json").stdout)
    row = next(r for r in listed if r["amountMNT"] == 700)
    assert row["state"] == "needs_review", sale.stdout + sale.stderr
    qrpos(cli_env, "outbox", "abandon", str(row["id"]))
    after = json.loads(qrpos(cli_env, "outbox", "list", "--all", "--json").stdout)
    assert next(r for r in after if r["id"] == row["id"])["state"] == "needs_review"
    assert str(row["id"]) in qrpos(cli_env, "outbox", "review").stdout


def test_a_reply_that_does_not_match_its_sale_holds_its_row_for_that_sale(
    cli_env: dict[str, str], sandbox: Sandbox
) -> None:
    """A 201 whose body is not this sale's (another amount) sends the sale to review and
    holds the row the service committed for it: a later sale of the same price that never
    committed (every send a 500) is not approved on that row, and abandoning the later
    sale never refunds the first customer's charge."""
    warm = sandbox.create_wallet(10_000)
    assert qrpos(cli_env, "charge", "--amount", "100", "--token", warm.qr_token).returncode == 0
    first = sandbox.create_wallet(10_000)
    sandbox.arm_fault("mismatched_reply", count=1, operation="charge")
    mismatched = qrpos(cli_env, "charge", "--amount", "4500", "--token", first.qr_token)
    assert mismatched.returncode == 3, mismatched.stdout + mismatched.stderr
    [first_tx] = charged(sandbox, first.wallet_id)
    listed = json.loads(qrpos(cli_env, "outbox", "list", "--all", "--json").stdout)
    held = next(r for r in listed if r["amountMNT"] == 4500)
    assert held["state"] == "needs_review"

    later = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_before_commit", count=500, operation="charge")
    again = qrpos(
        cli_env, "charge", "--amount", "4500", "--token", later.qr_token, "--deadline", "4"
    )
    assert again.returncode != 0, again.stdout  # never approved on the first sale's row
    assert charged(sandbox, later.wallet_id) == []
    listed = json.loads(qrpos(cli_env, "outbox", "list", "--all", "--json").stdout)
    second = next(r for r in listed if r["amountMNT"] == 4500 and r["id"] != held["id"])
    assert second["transactionID"] != first_tx
    qrpos(cli_env, "outbox", "abandon", str(second["id"]))
    sandbox.clear_faults()
    qrpos(cli_env, "outbox", "resolve", "--deadline", "5")
    assert sandbox.transaction(first_tx).status == "COMPLETED"  # never refunded
    assert sandbox.wallet(first.wallet_id).balance_mnt == 10_000 - 4500
    review = qrpos(cli_env, "outbox", "review")
    assert f"#{held['id']}" in review.stdout and first_tx in review.stdout
