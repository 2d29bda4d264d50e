"""Issue 47, defect 1: every review can be settled to the truth.

A charge commits and its 201 is lost; the kiosk is re-paired to another terminal of the
same merchant; the sale goes to a person (`other_terminal`) with no rows offered, because
one terminal never reads another's history. The owner reads the transaction on the
service's dashboard and names it: `--charged TX` records the person's word (the kiosk says
it could not check it), `--refund TX` goes out through the durable refund queue under the
new pairing (the contract lets a terminal reverse any charge of its own merchant). Real
`qrpos` processes against the sandbox over loopback HTTP; the sandbox's books are read
afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headless import cli_environment, qrpos
from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials

EXIT_REFUSED = 2


def _listed(env: dict[str, str]) -> list[dict[str, object]]:
    out = qrpos(env, "outbox", "list", "--all", "--json")
    assert out.returncode == 0, out.stderr
    rows: list[dict[str, object]] = json.loads(out.stdout)
    return rows


def _lost_reply_then_repaired(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials, sandbox: Sandbox
) -> tuple[dict[str, str], int, str, str]:
    """A 4,500 sale committed on terminal A with its 201 lost, then the kiosk re-paired
    to terminal B and resolved: the sale waits for a person (`other_terminal`), no rows.
    Returns B's environment, the sale's id, the charge's id and the wallet's id."""
    env_a = cli_environment(tmp_path, live_url, terminal)
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("drop_after_commit", count=100, operation="charge")
    gave_up = qrpos(
        env_a, "charge", "--amount", "4500", "--token", wallet.qr_token, "--deadline", "2"
    )
    assert gave_up.returncode == 3, gave_up.stderr  # kept unresolved
    sandbox.clear_faults()
    (charge,) = [t for t in sandbox.transactions() if t.wallet_id == wallet.wallet_id]
    assert charge.status is spec.TxStatus.COMPLETED
    env_b = cli_environment(tmp_path, live_url, sandbox.create_terminal("m_demo"))
    qrpos(env_b, "outbox", "resolve", "--deadline", "15")  # after settle_s (7 s)
    (sale,) = _listed(env_b)
    assert sale["state"] == "needs_review", sale
    out = qrpos(env_b, "outbox", "review", "--json")
    (view,) = json.loads(out.stdout)
    assert view["reason"] == "other_terminal" and view["candidates"] == [], view
    return env_b, int(str(sale["id"])), charge.id, wallet.wallet_id


def test_a_charge_named_from_the_dashboard_settles_an_other_terminal_review(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials, sandbox: Sandbox
) -> None:
    env, sale_id, tx_id, wallet_id = _lost_reply_then_repaired(
        tmp_path, live_url, terminal, sandbox
    )
    done = qrpos(env, "outbox", "review", str(sale_id), "--charged", tx_id)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "could not check" in done.stdout + done.stderr
    (sale,) = _listed(env)
    assert sale["state"] == "charged_per_review", sale
    assert sale["transactionID"] == tx_id
    # the money stays where it went: charged once, not refunded
    assert sandbox.transaction(tx_id).status is spec.TxStatus.COMPLETED
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000 - 4500
    # the person's word and that it was not checked are in the audit trail
    audit = qrpos(env, "outbox", "show", str(sale_id), "--json")
    assert audit.returncode == 0, audit.stderr
    assert "not checked" in audit.stdout, audit.stdout
    # the same row cannot be given to another sale: the second review is refused
    assert qrpos(env, "outbox", "review", str(sale_id), "--charged", tx_id).returncode != 0


def test_a_charge_named_from_the_dashboard_is_refunded_under_the_new_pairing(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials, sandbox: Sandbox
) -> None:
    env, sale_id, tx_id, wallet_id = _lost_reply_then_repaired(
        tmp_path, live_url, terminal, sandbox
    )
    done = qrpos(env, "outbox", "review", str(sale_id), "--refund", tx_id)
    assert done.returncode == 0, (done.stdout, done.stderr)
    (sale,) = [r for r in _listed(env) if r["kind"] == "charge"]
    assert sale["state"] == "refunded_per_review", sale
    (refund,) = [r for r in _listed(env) if r["kind"] != "charge"]
    assert (refund["transactionID"], refund["state"]) == (tx_id, "refunded"), refund
    assert sandbox.transaction(tx_id).status is spec.TxStatus.REVERSED
    assert sandbox.wallet(wallet_id).balance_mnt == 10_000


@pytest.mark.parametrize("named", ["tx_", "not-a-tx", "tx_ab/../cd"])
def test_a_malformed_id_is_refused_and_nothing_changes(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials, sandbox: Sandbox, named: str
) -> None:
    env, sale_id, tx_id, _ = _lost_reply_then_repaired(tmp_path, live_url, terminal, sandbox)
    out = qrpos(env, "outbox", "review", str(sale_id), "--refund", named)
    assert out.returncode == EXIT_REFUSED, (out.stdout, out.stderr)
    (sale,) = _listed(env)
    assert sale["state"] == "needs_review"
    assert sandbox.transaction(tx_id).status is spec.TxStatus.COMPLETED


@pytest.mark.parametrize("then", ["charged", "refund"])
def test_a_refused_refund_of_a_named_charge_can_still_be_settled_to_the_truth(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials, sandbox: Sandbox, then: str
) -> None:
    """The refund of a charge named on a person's word is refused (403): the sale's
    `refund_refused` review had no row (another pairing's history is unreadable) and "not
    charged" is refused for a proven charge, so nothing could settle it (the till
    simulator's seed 41). The sale's own recorded row settles it: kept as paid, or
    refunded again once the service takes it."""
    env, sale_id, tx_id, wallet_id = _lost_reply_then_repaired(
        tmp_path, live_url, terminal, sandbox
    )
    sandbox.arm_fault("forbidden", count=1, operation="reverse")
    refused = qrpos(env, "outbox", "review", str(sale_id), "--refund", tx_id)
    assert refused.returncode != 0 or "refused" in refused.stdout + refused.stderr
    (view,) = json.loads(qrpos(env, "outbox", "review", "--json").stdout)
    assert view["reason"] == "refund_refused", view
    assert sandbox.transaction(tx_id).status is spec.TxStatus.COMPLETED
    # "not charged" would be untrue, and is refused
    assert qrpos(env, "outbox", "review", str(sale_id), "--not-charged").returncode != 0
    done = qrpos(env, "outbox", "review", str(sale_id), f"--{then}", tx_id)
    assert done.returncode == 0, (done.stdout, done.stderr)
    (sale,) = [r for r in _listed(env) if r["kind"] == "charge"]
    if then == "charged":
        assert sale["state"] == "charged_per_review", sale
        assert sandbox.transaction(tx_id).status is spec.TxStatus.COMPLETED
        assert sandbox.wallet(wallet_id).balance_mnt == 10_000 - 4500
    else:
        assert sale["state"] == "refunded_per_review", sale
        assert sandbox.transaction(tx_id).status is spec.TxStatus.REVERSED
        assert sandbox.wallet(wallet_id).balance_mnt == 10_000
