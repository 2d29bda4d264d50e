"""Issue 41, defect 2: a refund's backoff must not follow the wall clock.

A refund met 500s and waits in the durable queue for its next try; NTP steps the Pi's
wall clock back 2 hours; the service recovers. docs/ledger.md promises that a step of
the clock changes no answer, and retry waits are capped at the longest wait the policy
can ask for (15 s by default): the refund must land within 30 s of the recovery through
`qrpos outbox resolve`, stepped or not.

The real `qrpos` commands against the sandbox on loopback; libfaketime moves the
commands' CLOCK_REALTIME alone (the boot and monotonic clocks stay real), from a file the
test rewrites while `qrpos outbox resolve` runs (see test_cli_clock_steps.py).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from headless import qrpos
from qrpos import spec
from qrpos.simulator import Sandbox

LIBFAKETIME = next(
    (str(p) for p in sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))), None
)
pytestmark = pytest.mark.skipif(
    LIBFAKETIME is None, reason="libfaketime is not installed (deploy/dev.sh test installs it)"
)

#: the refund is due this soon after the service answers again (the policy's longest
#: backoff is 15 s; the rest is room for a loaded machine and the process's start-up)
DUE_S = 30.0


def stepped(env: dict[str, str], tmp_path: Path) -> tuple[dict[str, str], Path]:
    """`env` under libfaketime at real time, and the file that steps its wall clock."""
    assert LIBFAKETIME is not None
    clock = tmp_path / "faketime"
    clock.write_text("+0\n")
    return {
        **env,
        "LD_PRELOAD": LIBFAKETIME,
        "FAKETIME_TIMESTAMP_FILE": str(clock),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }, clock


def resolving(env: dict[str, str], deadline_s: float) -> subprocess.Popen[str]:
    """`qrpos outbox resolve --deadline S`, running (the kiosk's settler)."""
    return subprocess.Popen(
        [sys.executable, "-m", "qrpos.cli", "outbox", "resolve", "--deadline", f"{deadline_s:g}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def status_of(sandbox: Sandbox, tx_id: str) -> spec.TxStatus:
    """The charge's status in the sandbox's own record (the truth)."""
    return next(tx.status for tx in sandbox.transactions() if tx.id == tx_id)


def state_of(env: dict[str, str], intent_id: object) -> str:
    """A sale's state as `qrpos outbox list --all --json` reads it."""
    out = qrpos(env, "outbox", "list", "--all", "--json")
    assert out.returncode == 0, out.stderr
    return str(next(r["state"] for r in json.loads(out.stdout) if r["id"] == intent_id))


def refunds(env: dict[str, str]) -> list[dict[str, Any]]:
    out = qrpos(env, "outbox", "list", "--all", "--json")
    assert out.returncode == 0, out.stderr
    return [r for r in json.loads(out.stdout) if r["kind"] == "reversal"]


@pytest.mark.parametrize("step", ["+0", "-2h"], ids=["clock_kept", "clock_stepped_back_2h"])
def test_a_queued_refund_lands_within_30_s_of_the_service_recovering(
    tmp_path: Path, cli_env: dict[str, str], sandbox: Sandbox, step: str
) -> None:
    """The refund waits after 500s; the wall clock is stepped `step` while `qrpos outbox
    resolve` runs; the service recovers: the charge is reversed within 30 s (the "+0"
    case is the control: the same path without the step)."""
    env, clock = stepped(cli_env, tmp_path)
    wallet = sandbox.create_wallet(10_000)
    sold = qrpos(env, "charge", "--amount", "4500", "--token", wallet.qr_token)
    assert sold.returncode == 0, sold.stderr
    tx_id = json.loads(sold.stdout)["id"]
    # the service fails every refund for now: the refund waits in the queue
    sandbox.arm_fault("error_before_commit", count=100_000, operation="reverse")
    queued = qrpos(env, "reverse", tx_id, "--deadline", "3")
    assert queued.returncode == 3, queued.stdout + queued.stderr  # unresolved, kept
    [waiting] = refunds(env)
    assert waiting["state"] == "pending" and waiting["transactionID"] == tx_id, waiting
    settler = resolving(env, 90)
    runs = [settler]
    time.sleep(1.5)  # the settler has met a 500 and waits for its next try
    clock.write_text(step + "\n")  # NTP steps the wall clock (or, in the control, not)
    time.sleep(1.0)
    sandbox.clear_faults()
    recovered = time.monotonic()
    landed: float | None = None
    try:
        while time.monotonic() - recovered < DUE_S:
            if status_of(sandbox, tx_id) is spec.TxStatus.REVERSED:
                landed = time.monotonic() - recovered
                # the service has applied it; the settler commits its 204 next: let it
                # (killed now, it would leave the row pending with the refund landed)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    settler.wait(timeout=15)
                break
            if settler.poll() is not None:
                # the settler stopped with the refund still queued: the kiosk runs it
                # again (its next pass), with the time that is left
                time.sleep(1.0)
                left = DUE_S - (time.monotonic() - recovered)
                settler = resolving(env, max(1.0, left))
                runs.append(settler)
            time.sleep(0.1)
    finally:
        said = []
        for run in runs:
            if run.poll() is None:
                run.kill()
            said.append(run.communicate(timeout=30)[0])
    story = qrpos(env, "outbox", "show", "r1")
    assert landed is not None, (
        f"no refund within {DUE_S:g} s of the service recovering (wall clock {step}); "
        f"{len(runs)} runs of `qrpos outbox resolve`:\n"
        + "\n---\n".join(said[:2] + said[-1:])
        + "\n"
        + story.stdout
    )
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000
    [done] = refunds(env)
    assert done["state"] == "refunded", (done, story.stdout)


@pytest.mark.parametrize("ahead", ["+0", "+2h"], ids=["clock_kept", "clock_stepped_back_2h"])
def test_a_watched_abandoned_sale_is_looked_up_again_after_the_clock_steps_back(
    tmp_path: Path, cli_env: dict[str, str], sandbox: Sandbox, ahead: str
) -> None:
    """Found by the fault campaign (issue 41's clock steps): the same wall-clock wait on
    the other side of an abandon. A sale committed with its replies lost is abandoned;
    while the kiosk's clock is 2 h ahead the settler looks its history up (unreadable:
    500s), and that look-up's time is stored; NTP steps the clock back; the history
    answers again. The sale must be looked up again within 30 s, not when the wall clock
    reaches the stored time two hours later (the "+0" case is the control: the same path
    without the step). Since issue 47 that look-up hands the window-paired row to a person
    (`unconfirmed_row`) rather than refunding it, so the prompt look-up shows as the review
    opening; the owner then refunds the row and the customer's money comes back."""
    env, clock = stepped(cli_env, tmp_path)
    warm = sandbox.create_wallet(10_000)
    assert qrpos(env, "charge", "--amount", "100", "--token", warm.qr_token).returncode == 0
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=100_000, operation="charge")
    sandbox.arm_fault("error_before_commit", count=100_000, operation="list")
    sale = qrpos(env, "charge", "--amount", "4500", "--token", wallet.qr_token, "--deadline", "2")
    assert sale.returncode == 3, sale.stdout + sale.stderr
    rows: list[dict[str, Any]] = json.loads(qrpos(env, "outbox", "list", "--json").stdout)
    [row] = [r for r in rows if r["amountMNT"] == 4500]
    assert qrpos(env, "outbox", "abandon", str(row["id"])).returncode == 0
    [tx_id] = [tx.id for tx in sandbox.transactions() if tx.wallet_id == wallet.wallet_id]
    clock.write_text(ahead + "\n")  # the Pi booted on a clock 2 h ahead (or right)
    looked = qrpos(env, "outbox", "resolve", "--deadline", "8")  # the history still fails
    assert looked.returncode == 3, looked.stdout + looked.stderr
    assert state_of(env, row["id"]) == "abandoned"
    clock.write_text("+0\n")  # NTP's step back
    sandbox.clear_faults()
    recovered = time.monotonic()
    runs = 0
    while time.monotonic() - recovered < DUE_S:
        if state_of(env, row["id"]) == "needs_review":
            break
        left = DUE_S - (time.monotonic() - recovered)
        qrpos(env, "outbox", "resolve", "--deadline", f"{max(1.0, min(left, 10.0)):.0f}")
        runs += 1
    story = qrpos(env, "outbox", "show", str(row["id"]))
    assert state_of(env, row["id"]) == "needs_review", (
        f"the abandoned sale was not looked up again within {DUE_S:g} s of the history "
        f"answering after the clock stepped from {ahead} to +0 ({runs} runs of `qrpos outbox "
        f"resolve`):\n{story.stdout}"
    )
    # the row is offered, never refunded on the window's word
    reviews = json.loads(qrpos(env, "outbox", "review", "--json").stdout)
    [review] = [r for r in reviews if r["id"] == int(row["id"])]
    assert review["reason"] == "unconfirmed_row", review
    assert [c["transactionID"] for c in review["candidates"]] == [tx_id]
    assert status_of(sandbox, tx_id) is spec.TxStatus.COMPLETED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - 4500
    # the owner, who saw the customer walk away, refunds it
    refund = qrpos(env, "outbox", "review", str(row["id"]), "--refund", tx_id)
    assert refund.returncode == 0, refund.stdout + refund.stderr
    assert state_of(env, row["id"]) == "refunded_per_review"
    assert status_of(sandbox, tx_id) is spec.TxStatus.REVERSED
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000
