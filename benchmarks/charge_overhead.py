"""What the durable outbox costs per charge, against a bare POST in the same run.

    python benchmarks/charge_overhead.py            (300 charges of each kind)
    python benchmarks/charge_overhead.py --quick    (what the suite runs)

Both kinds charge the same uvicorn sandbox over loopback, interleaved, each with a fresh
wallet token. "Ledger" is `ChargeDesk.charge`: the intent commit (fsync'd, WAL,
synchronous=FULL) + the request + the outcome commit. "Bare" is one httpx POST with
the same headers. Printed: medians, the ratio ledger/bare (target ≤ 1.5× on a local
disk) and the median time of one outbox commit.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from qrpos import spec
from qrpos.ledger import ChargeDesk, Ledger, RetryPolicy
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app, serve_in_thread

T = TypeVar("T")


@dataclass
class Figures:
    """Medians in milliseconds."""

    charges: int
    bare_ms: float
    ledger_ms: float
    commit_ms: float
    commits_per_charge: float

    @property
    def ratio(self) -> float:
        """Ledger charge time over bare POST time."""
        return self.ledger_ms / self.bare_ms

    def report(self) -> str:
        """The figures, one per line."""
        return "\n".join(
            [
                f"charges          {self.charges} of each kind, interleaved",
                f"bare POST        {self.bare_ms:.2f} ms median",
                f"through ledger   {self.ledger_ms:.2f} ms median",
                f"ratio            {self.ratio:.2f}x (target <= 1.5x on a local disk)",
                f"outbox commit    {self.commit_ms:.2f} ms median "
                f"({self.commits_per_charge:.0f} per charge)",
            ]
        )


async def measure(charges: int, workdir: Path) -> Figures:
    """Run both kinds against one sandbox and return the medians."""
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    term = sandbox.create_terminal("m_demo")
    tokens = [sandbox.create_wallet(1_000_000).qr_token for _ in range(2 * charges + 10)]
    bare_times: list[float] = []
    ledger_times: list[float] = []
    commit_times: list[float] = []
    with serve_in_thread(create_app(sandbox)) as url:
        ledger = Ledger.open(workdir / "outbox.sqlite3")
        timed_write = ledger.awrite

        async def awrite(fn: Callable[[Any], T]) -> T:
            start = time.perf_counter()
            try:
                return await timed_write(fn)
            finally:
                commit_times.append(time.perf_counter() - start)

        ledger.awrite = awrite  # type: ignore[method-assign]
        client = TerminalClient(url, term.username, term.password)
        desk = ChargeDesk(ledger, client, policy=RetryPolicy())
        bare = httpx.AsyncClient(base_url=url, auth=(term.username, term.password))

        async def bare_post(token: str) -> None:
            response = await bare.post(
                spec.CHARGE_PATH,
                json={spec.FIELD_QR_TOKEN: token, spec.FIELD_AMOUNT: 10},
                headers={spec.IDEMPOTENCY_HEADER: f"bench-{uuid.uuid4().hex}"},
            )
            assert response.status_code == 201, response.text

        async def through_ledger(token: str) -> None:
            result = await desk.charge(10, token, deadline_s=30)
            assert result.charged, result

        async def timed(action: Callable[[str], Awaitable[None]], token: str, into: list[float]):
            start = time.perf_counter()
            await action(token)
            into.append(time.perf_counter() - start)

        try:
            for token in tokens[:10]:  # warm both paths up (connections, caches)
                await bare_post(token)
            commit_times.clear()
            for i in range(charges):
                pair = [(bare_post, bare_times), (through_ledger, ledger_times)]
                if i % 2:
                    pair.reverse()
                for n, (action, into) in enumerate(pair):
                    await timed(action, tokens[10 + 2 * i + n], into)
        finally:
            await bare.aclose()
            await client.aclose()
            ledger.close()
    return Figures(
        charges=charges,
        bare_ms=statistics.median(bare_times) * 1000,
        ledger_ms=statistics.median(ledger_times) * 1000,
        commit_ms=statistics.median(commit_times) * 1000,
        commits_per_charge=len(commit_times) / charges,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--charges", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="20 charges of each kind")
    parser.add_argument("--dir", type=Path, default=None, help="where the outbox file goes")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    charges = 20 if args.quick else args.charges
    with tempfile.TemporaryDirectory(prefix="qrpos-overhead-", dir=args.dir) as tmp:
        figures = asyncio.run(measure(charges, Path(tmp)))
    print(f"charge overhead (outbox in {args.dir or tempfile.gettempdir()})")
    print(figures.report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
