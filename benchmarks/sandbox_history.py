"""Sandbox history at shop scale: seed 60,000 charges, then page through all of them.

Figures are ratios against baselines measured in the same run:
- seeding: time per `seed_charge` over the time to build the same rows as plain dicts;
- paging: the time of the last page (limit=1000) over the first page. Keyset paging keeps
  it near 1; an offset or scan-and-sort per page would grow with the depth.

    python benchmarks/sandbox_history.py            # 60,000 rows
    python benchmarks/sandbox_history.py --quick    # 6,000 rows (run by the test suite)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

from qrpos.simulator import Sandbox, SimulatorOptions


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--quick", action="store_true", help="6,000 rows")
    args = parser.parse_args(argv)
    rows = 6_000 if args.quick else args.rows

    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    creds = sandbox.create_terminal("m_bench")
    terminal = sandbox.authenticate_basic(creds.username, creds.password)
    assert terminal is not None
    now = datetime.now(UTC)
    # Shuffled times: seeding order must not matter to the listing.
    moments = [now - timedelta(seconds=(i * 7919) % rows * 40) for i in range(rows)]

    t0 = time.perf_counter()
    baseline = [{"amount": 1 + i % 5000, "at": m.isoformat()} for i, m in enumerate(moments)]
    base_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i, moment in enumerate(moments):
        sandbox.seed_charge(creds.username, 1 + i % 5000, moment)
    seed_s = time.perf_counter() - t0
    assert len(baseline) == rows

    window = {"from": (now - timedelta(days=60)).strftime("%Y-%m-%dT%H:%M:%SZ"), "limit": "1000"}
    t0 = time.perf_counter()
    sandbox.list_transactions(terminal, {"limit": "1"})  # sorts the seeded rows once
    sort_s = time.perf_counter() - t0
    page_times: list[float] = []
    seen = 0
    cursor = ""
    while True:
        query = dict(window, cursor=cursor) if cursor else window
        t0 = time.perf_counter()
        reply = sandbox.list_transactions(terminal, query)
        page_times.append(time.perf_counter() - t0)
        seen += len(reply.json["transactions"])
        cursor = reply.json["nextCursor"]
        if not cursor:
            break
    if seen != rows:
        print(f"FAIL: listed {seen} of {rows} rows")
        return 1
    first = page_times[0] if len(page_times) < 3 else statistics.mean(page_times[:3])
    last = page_times[-2] if len(page_times) > 1 else page_times[-1]
    print(f"rows seeded:               {rows}")
    print(f"seeding:                   {seed_s:.2f} s ({rows / seed_s:,.0f} rows/s)")
    print(f"seed cost vs plain dicts:  x{seed_s / base_s:.1f}")
    print(f"first read (one sort):     {sort_s * 1000:.0f} ms")
    print(f"pages of 1000:             {len(page_times)} in {sum(page_times):.2f} s")
    print(f"deepest page vs first:     x{last / first:.2f} (keyset: stays near 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
