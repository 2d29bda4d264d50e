"""The VAT follow-up policy's decisions (pure) and the follower's use of them: batched
polls at least the gap apart, every receipt checked again within the cap, any 429 of the
kiosk (a charge's too) pushing the next poll out, and the fleet model quick run."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from qrpos.reports.history_cache import HistoryCache
from qrpos.reports.vat_watch import (
    RETRY_AFTER_CEILING_S,
    BatchedFollowPolicy,
    FixedIntervalPolicy,
    Pressure,
    VatFollowUp,
)
from qrpos.service import Approved, RateLimited, TerminalClient
from qrpos.simulator import Sandbox, WalletInfo

POLICY = BatchedFollowPolicy()
ROOT = Path(__file__).resolve().parents[2]

times = st.floats(min_value=0, max_value=86_400, allow_nan=False)


@given(
    starts=st.lists(times, min_size=1, max_size=40),
    last=st.none() | times,
    level=st.integers(0, 4),
    u=st.floats(0, 0.999),
)
def test_a_poll_is_never_planned_sooner_than_the_gap_or_a_receipts_first_check(
    starts: list[float], last: float | None, level: int, u: float
) -> None:
    due = POLICY.next_poll_at(starts, last, Pressure(level), u)
    assert due is not None
    assert due >= min(starts) + POLICY.first_check_s
    if last is not None:
        assert due >= last + POLICY.min_gap_s * 2**level
        assert due > last


@given(
    starts=st.lists(times, min_size=1, max_size=40),
    last=times,
    level=st.integers(0, 4),
    u=st.floats(0, 0.999),
    sales=st.none() | st.integers(0, 50),
)
def test_a_selling_till_keeps_the_long_gap_and_only_a_quiet_one_polls_sooner(
    starts: list[float], last: float, level: int, u: float, sales: int | None
) -> None:
    """The lunch peak's budget holds whatever the till is told: unknown sales count as
    selling; a quiet till never polls sooner than the quiet gap, nor later than a busy one."""
    due = POLICY.next_poll_at(starts, last, Pressure(level), u, recent_sales=sales)
    busy = POLICY.next_poll_at(starts, last, Pressure(level), u, recent_sales=POLICY.busy_sales)
    assert due is not None and busy is not None
    assert busy >= last + POLICY.min_gap_s * 2**level
    if sales is None or sales >= POLICY.busy_sales:
        assert due == busy
    else:
        assert last + POLICY.quiet_gap_s * 2**level <= due <= busy
    assert POLICY.quiet_gap_s < POLICY.min_gap_s


@given(started=times, after=st.none() | times)
def test_a_pending_receipt_is_checked_again_within_the_cap(
    started: float, after: float | None
) -> None:
    due = POLICY.receipt_due(started, after)
    assert due >= started + POLICY.first_check_s
    if after is not None and after >= started + POLICY.first_check_s:
        assert after < due <= after + POLICY.max_spacing_s


def test_nothing_followed_means_no_poll_under_both_policies() -> None:
    assert POLICY.next_poll_at([], 0.0, Pressure(), 0.5) is None
    assert FixedIntervalPolicy().next_poll_at([], 0.0, Pressure(), 0.5) is None


@given(retry_after=st.none() | st.floats(0, 3600), u=st.floats(0, 0.999), poll=st.booleans())
def test_every_429_of_the_kiosk_raises_the_backoff_and_honours_retry_after(
    retry_after: float | None, u: float, poll: bool
) -> None:
    busy = POLICY.rate_limited(Pressure(), 1000.0, retry_after, u, poll=poll)
    assert busy.level == 1
    # honoured up to the ceiling every Retry-After of the kiosk shares (a 3600 s one was obeyed)
    assert busy.not_before >= 1000.0 + min(retry_after or 0.0, RETRY_AFTER_CEILING_S)
    assert POLICY.succeeded(busy).level == 0
    # the old policy ignored a charge's 429 (the "before" of the fleet model)
    old = FixedIntervalPolicy().rate_limited(Pressure(), 1000.0, retry_after, u, poll=False)
    assert old == Pressure()


async def test_a_429_met_by_a_charge_pushes_the_next_poll_out(
    asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo, tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    cache = HistoryCache(tmp_path / "history.sqlite3")
    vat = VatFollowUp(asgi_client, cache, lambda: now, jitter=lambda: 0.0)
    charged = await asgi_client.charge(wallet.qr_token, 500, str(uuid.uuid4()))
    assert isinstance(charged, Approved)
    cache.store([charged.transaction])
    calm = vat.next_delay_s()
    assert calm is not None
    sandbox.arm_fault("rate_limit", operation="charge", retry_after=120)
    token = sandbox.wallet(wallet.wallet_id).qr_token
    assert isinstance(await asgi_client.charge(token, 500, str(uuid.uuid4())), RateLimited)
    held = vat.next_delay_s()
    assert held is not None and held >= 120 > calm
    assert vat.pressure.level == 1
    cache.close()


def test_fleet_model_quick_prints_the_table_and_the_ceiling_before_and_after() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fleet.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "| 5,000 | fixed-30s |" in out and "| 5,000 | batched |" in out
    assert "before (fixed-30s): the ceiling is reached at about" in out
    assert "after (batched): the ceiling is reached at about" in out
