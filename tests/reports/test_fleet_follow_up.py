"""The fleet model's figure for one kiosk's background requests per hour matches what the
real `VatFollowUp` does against the sandbox over a time-compressed busy stretch.

The follow-up and the sandbox share one virtual clock (both take a clock); the sandbox
issues every receipt `ISSUE_DELAY_S` after its charge. Sales arrive at the lunch rate (one
per kiosk every 2 min); the driver below plays the kiosk's timer: it waits (in virtual
time) for whichever comes first, the next sale or the policy's next poll. Requests go over
real loopback HTTP to uvicorn (the old policy's many polls in-process, to keep it quick).
The model (benchmarks/fleet.py, SimPy) runs the same scenario with the same policy
objects; the two agree within `TOLERANCE`.
"""

from __future__ import annotations

import importlib.util
import random
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from qrpos.reports.history_cache import HistoryCache
from qrpos.reports.vat_watch import (
    BatchedFollowPolicy,
    FixedIntervalPolicy,
    FollowPolicy,
    VatFollowUp,
)
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions
from qrpos.simulator.testing import asgi_transport

ROOT = Path(__file__).resolve().parents[2]
ASGI = "http://127.0.0.1"
ISSUE_DELAY_S = 150.0
SALE_EVERY_S = 120.0
HOURS = 2.0  # the model's peak window (11:30-13:30)
#: relative difference allowed between the model's and the sandbox's requests per hour
TOLERANCE = 0.15


def load_fleet() -> ModuleType:
    spec_ = importlib.util.spec_from_file_location("fleet_model", ROOT / "benchmarks/fleet.py")
    assert spec_ is not None and spec_.loader is not None
    module = importlib.util.module_from_spec(spec_)
    sys.modules["fleet_model"] = module
    spec_.loader.exec_module(module)
    return module


class VirtualClock:
    """Now, as the driver says (aware UTC)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


START = datetime(2024, 5, 2, 3, 30, tzinfo=UTC)  # 11:30 local


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(START)


@pytest.fixture
def sandbox(clock: VirtualClock) -> Iterator[Sandbox]:
    # overrides the shared fixture: the same virtual clock as the follow-up
    options = SimulatorOptions(rate_limit_enabled=False, vat_issue_delay_s=ISSUE_DELAY_S)
    sb = Sandbox(options, clock=clock)
    yield sb
    sb.close()


async def measured_per_hour(
    policy: FollowPolicy,
    kiosks: int,
    base_url: str,
    sandbox: Sandbox,
    clock: VirtualClock,
    tmp_path: Path,
    transport: httpx.AsyncBaseTransport | None = None,
) -> float:
    """Background (history) requests per kiosk per hour, the real follow-up on the wire."""
    total = 0
    for k in range(kiosks):
        # kiosks one after the other: the sandbox's clock never runs backwards
        begin = START + k * timedelta(hours=HOURS)
        clock.now = begin
        creds = sandbox.create_terminal("m_fleet")
        wallet = sandbox.create_wallet(10_000_000)
        rng = random.Random(k)
        cache = HistoryCache(tmp_path / f"k{k}" / "history.sqlite3")
        client = TerminalClient(base_url, creds.username, creds.password, transport=transport)
        async with client:
            vat = VatFollowUp(client, cache, clock, policy=policy, jitter=rng.random)
            end = begin + timedelta(hours=HOURS)
            next_sale = begin + timedelta(seconds=rng.expovariate(1 / SALE_EVERY_S))
            while True:
                delay = vat.next_delay_s()
                due = clock.now + timedelta(seconds=delay) if delay is not None else end
                if min(next_sale, due) >= end:
                    break
                if next_sale <= due:
                    clock.now = next_sale
                    token = sandbox.wallet(wallet.wallet_id).qr_token
                    outcome = await client.charge(token, 1_000, str(uuid.uuid4()))
                    assert isinstance(outcome, Approved)
                    cache.store([outcome.transaction])
                    next_sale += timedelta(seconds=rng.expovariate(1 / SALE_EVERY_S))
                else:
                    clock.now = due
                    result = await vat.poll_once()
                    assert result.error is None
        total += vat.requests
        cache.close()
    return total / kiosks / HOURS


def modelled_per_hour(policy: FollowPolicy, kiosks: int) -> float:
    fleet = load_fleet()
    rows = [
        fleet.simulate(
            fleet.Scenario(
                kiosks,
                policy,
                True,
                sample=kiosks,
                day=((11.5, 11.5 + HOURS, SALE_EVERY_S, 0.0),),
                storm=None,
                reports=False,
                owners=False,
                probes=False,
                others=False,
                fixed_issue_delay_s=ISSUE_DELAY_S,
                seed=seed,
            )
        )
        for seed in (1, 2, 3)
    ]
    total: float = sum(r.bg_per_kiosk_h_peak for r in rows)
    return total / len(rows)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("policy", "kiosks", "wire"),
    [(BatchedFollowPolicy(), 4, "loopback"), (FixedIntervalPolicy(), 1, "in-process")],
    ids=["batched", "fixed-30s"],
)
async def test_background_requests_per_hour_on_the_sandbox_match_the_fleet_model(
    policy: FollowPolicy,
    kiosks: int,
    wire: str,
    live_url: str,
    sim_app: Any,
    sandbox: Sandbox,
    clock: VirtualClock,
    tmp_path: Path,
) -> None:
    # the old policy's 190 polls go in-process (the same app, no sockets) to keep it quick
    url, transport = (live_url, None) if wire == "loopback" else (ASGI, asgi_transport(sim_app))
    measured = await measured_per_hour(policy, kiosks, url, sandbox, clock, tmp_path, transport)
    modelled = modelled_per_hour(policy, 8)
    print(f"{policy.name}: sandbox {measured:.2f}/h, model {modelled:.2f}/h")
    assert abs(measured - modelled) <= TOLERANCE * modelled, (measured, modelled)
