"""Fault campaign: many sales against the sandbox with faults and SIGKILLs; count the damage.

    python benchmarks/fault_campaign.py --charges 1000 --kills      (the long run)
    python benchmarks/fault_campaign.py --quick                      (what the suite runs)

Each sale gets its own wallet. Before a sale, faults are armed at random (drop after
commit, 5xx before/after commit, slow responses past the client timeout, 429 storms,
forgotten idempotency keys) and the amount sometimes repeats the previous one. Some
sales are abandoned while unclear. With --kills, some sales run as a `qrpos charge`
process killed with SIGKILL at a random moment, then `qrpos outbox resolve` (or the same
`qrpos charge` again) finishes them. At the end every sandbox charge must be matched by
exactly one sale, no sale charged twice, nothing left unreported, integrity_check ok.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from qrpos import spec
from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy, records
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app, serve_in_thread
from qrpos.simulator.faults import FAULT_KINDS

CLIENT_TIMEOUT_S = 0.5
#: the in-process desk: real (short) waits so that late commits are honoured
POLICY = RetryPolicy(
    base_delay_s=0.01,
    max_delay_s=0.05,
    max_sends=4,
    resend_horizon_s=3600.0,
    absent_after_s=0.0,
    settle_s=CLIENT_TIMEOUT_S + 0.5,
    window_margin_s=1.0,
    lookup_interval_s=0.05,
)
FAULTS = FAULT_KINDS


@dataclass
class Figures:
    """What a run counted."""

    charges: int = 0
    faults: collections.Counter[str] = field(default_factory=collections.Counter)
    kills: int = 0
    abandoned: int = 0
    duplicates: int = 0
    lost: int = 0
    misattributed: int = 0
    unreported: int = 0
    needs_review: int = 0
    still_open: int = 0
    states: collections.Counter[str] = field(default_factory=collections.Counter)
    integrity: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """No duplicate, no lost sale, nothing misattributed or unreported, file intact."""
        return (
            self.duplicates == 0
            and self.lost == 0
            and self.misattributed == 0
            and self.unreported == 0
            and self.integrity == "ok"
        )

    def report(self) -> str:
        """The figures, one per line."""
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        states = ", ".join(f"{k} {v}" for k, v in sorted(self.states.items()))
        return "\n".join(
            [
                f"charges        {self.charges} sales in {self.seconds:.1f} s",
                f"faults         {sum(self.faults.values())} ({faults})",
                f"kills          {self.kills} (SIGKILL of `qrpos charge`)",
                f"abandoned      {self.abandoned}",
                f"final states   {states}",
                f"needs review   {self.needs_review} (reported for a person)",
                f"still open     {self.still_open} (reported by `qrpos outbox list`)",
                f"duplicates     {self.duplicates}",
                f"lost           {self.lost}",
                f"misattributed  {self.misattributed}",
                f"unreported     {self.unreported}",
                f"integrity      {self.integrity}",
            ]
        )


def arm_random_faults(sandbox: Sandbox, rng: random.Random, figures: Figures) -> None:
    """Arm zero to two faults for the next requests."""
    for _ in range(rng.choice((0, 1, 1, 2))):
        kind = rng.choice(FAULTS)
        params: dict[str, object] = {}
        count = 1
        if kind == "delay":
            params = {"seconds": CLIENT_TIMEOUT_S + rng.uniform(0.1, 0.4), "operation": "charge"}
        elif kind == "rate_limit":
            count, params = rng.randint(2, 6), {"retry_after": 0.01}
        elif kind == "forget_idempotency":
            count = 2
        elif kind in ("error_before_commit", "error_after_commit"):
            count = rng.randint(1, 3)
        sandbox.arm_fault(kind, count=count, **params)  # type: ignore[arg-type]
        figures.faults[kind] += 1


def cli_env(base: Path, url: str, username: str, password: str) -> dict[str, str]:
    """The environment of a `qrpos` process: systemd credential, state dir, sandbox URL."""
    creds = base / "creds"
    creds.mkdir(exist_ok=True)
    (creds / "qrpos-password").write_text(password + "\n")
    (base / "config.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QRPOS_")}
    env.update(
        CREDENTIALS_DIRECTORY=str(creds),
        QRPOS_BASE_URL=url,
        QRPOS_USERNAME=username,
        QRPOS_STATE_DIR=str(base / "state"),
        QRPOS_CONFIG=str(base / "config.toml"),
        QRPOS_REQUEST_TIMEOUT=str(CLIENT_TIMEOUT_S),
    )
    return env


def qrpos(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "qrpos.cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def killed_sale(env: dict[str, str], amount: int, token: str, rng: random.Random) -> None:
    """Run `qrpos charge`, SIGKILL it at a random moment, then finish the sale."""
    proc = qrpos(env, "charge", "--amount", str(amount), "--token", token, "--deadline", "5")
    time.sleep(rng.uniform(0.2, 1.2))  # interpreter start-up is ~0.3-0.6 s
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    if rng.random() < 0.5:
        # run the same command again: it resumes the same sale
        again = qrpos(env, "charge", "--amount", str(amount), "--token", token, "--deadline", "5")
    else:
        again = qrpos(env, "outbox", "resolve", "--deadline", "5")
    again.wait(timeout=120)


async def campaign(charges: int, kills: bool, seed: int, workdir: Path) -> Figures:
    """Run the campaign and check the sandbox against the outbox."""
    rng = random.Random(seed)
    figures = Figures()
    started = time.monotonic()
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    term = sandbox.create_terminal("m_demo")
    with serve_in_thread(create_app(sandbox)) as url:
        env = cli_env(workdir, url, term.username, term.password)
        ledger = Ledger.open(workdir / "state" / "outbox.sqlite3")
        client = TerminalClient(url, term.username, term.password, timeout_s=CLIENT_TIMEOUT_S)
        desk = ChargeDesk(ledger, client, policy=POLICY)
        sales: list[tuple[str, str]] = []  # (wallet id, token)
        amount = 1000
        try:
            for n in range(charges):
                wallet = sandbox.create_wallet(1_000_000)
                sales.append((wallet.wallet_id, wallet.qr_token))
                if rng.random() > 0.3:  # else the same amount twice in a row
                    amount = rng.choice((500, 1000, 2500, rng.randint(1, 50_000)))
                arm_random_faults(sandbox, rng, figures)
                if kills and (rng.random() < 0.08 or n % 20 == 10):
                    figures.kills += 1
                    await asyncio.to_thread(killed_sale, env, amount, wallet.qr_token, rng)
                else:
                    result = await desk.charge(
                        amount, wallet.qr_token, deadline_s=rng.choice((0.3, 3.0, 3.0))
                    )
                    if result.is_open and rng.random() < 0.5:
                        await desk.abandon(result.intent_id)
                        figures.abandoned += 1
                sandbox.clear_faults()
                # what earlier runs left is settled before the next sale, as the kiosk does
                await desk.recover(deadline_s=10)
            await asyncio.sleep(POLICY.settle_s)
            await desk.recover(deadline_s=30)
            check(sandbox, ledger, sales, term.username, figures)
            figures.integrity = ledger.integrity_check()
        finally:
            await client.aclose()
            ledger.close()
    figures.charges = charges
    figures.seconds = time.monotonic() - started
    return figures


def check(
    sandbox: Sandbox, ledger: Ledger, sales: list[tuple[str, str]], username: str, fig: Figures
) -> None:
    """Compare every sandbox charge with the outbox."""
    intents = ledger.read(lambda c: records.list_intents(c, include_final=True))
    by_tx: dict[str, list[records.IntentRow]] = collections.defaultdict(list)
    for row in intents:
        fig.states[str(row.state)] += 1
        if row.tx_id:
            by_tx[row.tx_id].append(row)
        if row.is_open:
            fig.still_open += 1
        if row.state is IntentState.NEEDS_REVIEW:
            fig.needs_review += 1
    reviewed = {row.token_sha256 for row in intents if row.state is IntentState.NEEDS_REVIEW}
    digest_of = {wallet_id: records.token_digest(token) for wallet_id, token in sales}
    ours = [
        tx
        for tx in sandbox.transactions()
        if tx.type is spec.TxType.CHARGE and tx.username == username
    ]
    per_wallet = collections.Counter(tx.wallet_id for tx in ours)
    fig.duplicates = sum(n - 1 for n in per_wallet.values() if n > 1)
    for tx in ours:
        owners = by_tx.get(tx.id, [])
        if len(owners) > 1:
            fig.misattributed += 1
        elif not owners and digest_of.get(tx.wallet_id or "") not in reviewed:
            fig.lost += 1  # a customer charged and no sale (nor a review) says so
        elif owners and owners[0].token_sha256 != digest_of.get(tx.wallet_id or ""):
            fig.misattributed += 1
        elif (
            owners
            and owners[0].state is IntentState.REVERSED_AFTER_ABANDON
            and tx.status is not spec.TxStatus.REVERSED
        ):
            fig.lost += 1  # found charged after abandon but never refunded
    known = {tx.id for tx in ours}
    for tx_id, owners in by_tx.items():
        if tx_id not in known and any(o.charged for o in owners):
            fig.misattributed += 1  # a sale claims a charge that does not exist
    listed = {row.id for row in intents if row.is_open or row.state is IntentState.NEEDS_REVIEW}
    fig.unreported = sum(
        1
        for row in intents
        if row.charged is None
        and row.id not in listed
        and not row.watching
        and row.state is not IntentState.ABANDONED
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--charges", type=int, default=200)
    parser.add_argument("--kills", action="store_true", help="also SIGKILL `qrpos charge`")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="40 sales with kills")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    charges = 40 if args.quick else args.charges
    logging.disable(logging.CRITICAL)  # the faults make the sandbox and client log a lot
    with tempfile.TemporaryDirectory(prefix="qrpos-campaign-") as tmp:
        figures = asyncio.run(campaign(charges, args.kills or args.quick, seed, Path(tmp)))
    print(f"fault campaign (seed {seed})")
    print(figures.report())
    print("RESULT:", "ok" if figures.ok else "FAILED")
    return 0 if figures.ok else 1


if __name__ == "__main__":
    sys.exit(main())
