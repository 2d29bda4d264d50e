"""What the command tests share: a canteen's busy day in the sandbox, seen by `qrpos`
processes."""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from headless import cli_environment, qrpos
from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials

#: a Pi's console
WIDTH = 80


@pytest.fixture
def busy_day(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
) -> dict[str, str]:
    """A canteen's day: sixty sales of every size today and yesterday, refunds, pending
    receipts, sales of this kiosk's own (one unsettled, one waiting for the owner)."""
    env = cli_environment(tmp_path, live_url, terminal)
    env["COLUMNS"] = str(WIDTH)
    # a state dir as short as a kiosk's (/var/lib/qrpos): pytest's own paths are longer
    # than a console line, and a path is never folded
    short = Path(tempfile.mkdtemp(prefix="q", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    env["QRPOS_STATE_DIR"] = str(short / "state")
    now = datetime.now(UTC)
    for i in range(60):
        amount = (1, 999, 4_500, 12_000, 250_000, spec.AMOUNT_MAX_MNT)[i % 6]
        status = spec.TxStatus.REVERSED if i % 9 == 0 else spec.TxStatus.COMPLETED
        vat = spec.VatStatus.PENDING if i % 7 == 0 and status is spec.TxStatus.COMPLETED else None
        when = now - timedelta(minutes=23 * i)
        sandbox.seed_charge(terminal.username, amount, when, status=status, vat_status=vat)
    for amount in (4_500, spec.AMOUNT_MAX_MNT):
        wallet = sandbox.create_wallet(2_000_000)
        done = qrpos(env, "charge", "--amount", str(amount), "--token", wallet.qr_token)
        assert done.returncode == 0, done.stderr
    wallet = sandbox.create_wallet(2_000_000)
    sandbox.arm_fault("error_before_commit", count=50, operation="charge")
    kept = qrpos(env, "charge", "--amount", "12000", "--token", wallet.qr_token, "--deadline", "1")
    assert kept.returncode == 3, kept.stderr
    sandbox.clear_faults()
    assert qrpos(env, "prices", "set", "1", "1000000", "Long label here!").returncode == 0
    return env
