"""End of day over many charges: `qrpos.reports.end_of_day` against bare httpx paging.

Seeds N charges of one terminal into a sandbox (spread over one local day), serves it
with uvicorn on loopback from a separate process, then times, in the same run and
against the same server:

- baseline: the bare minimum of reading the window: httpx GETs with limit=1000, the
  body read and JSON-decoded (untyped), `nextCursor` followed, nothing else;
- report: `end_of_day` (every row decoded strictly into the typed wire models, totals,
  hourly buckets, reconciliation-ready).

Each round runs both, one right after the other (which goes first alternates from round to
round), and gives a paired ratio; the figure is the median of `--repeat` (5) paired rounds
(target <= 1.05), so a swing of the machine's load between rounds cancels out instead of
deciding the result. The best of each is printed too. The CPU time of this process is
compared too: it leaves out the sandbox and the machine's other load, so it says what the
client itself costs. Peak
memory of the report (tracemalloc, started after seeding; the sandbox runs in a
separate process, so only this process's memory is counted) is measured at two sizes
to show it does not grow with the rows.

    .venv/bin/python benchmarks/report.py            # 6,000 and 60,000 rows
    .venv/bin/python benchmarks/report.py --quick    # 2,000 and 6,000 rows (the suite)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx

from qrpos import spec
from qrpos.reports import day_window, end_of_day
from qrpos.service import TerminalClient, format_rfc3339
from qrpos.simulator import Sandbox, SimulatorOptions

DAY = date(2024, 5, 2)
#: end of day may take at most this multiple of bare paging's time
TARGET = 1.05


def seed(rows: int, db: Path) -> tuple[str, str]:
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False, db_path=db))
    creds = sandbox.create_terminal("m_bench")
    start, _end = day_window(DAY)
    step = timedelta(days=1) / rows
    for i in range(rows):
        status = spec.TxStatus.REVERSED if i % 50 == 0 else spec.TxStatus.COMPLETED
        sandbox.seed_charge(creds.username, 100 + i % 9_000, start + step * i, status=status)
    sandbox.close()
    return creds.username, creds.password


# The sandbox runs in its own process so that neither its CPU time (the GIL) nor its
# memory is charged to the code measured here.
SERVER = """
import sys
from pathlib import Path
from qrpos.simulator import Sandbox, SimulatorOptions, create_app, serve_in_thread
sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False, db_path=Path(sys.argv[1])))
with serve_in_thread(create_app(sandbox)) as url:
    print(url, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def served(db: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError("the sandbox process did not start")
        yield url
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


async def bare_paging(url: str, username: str, password: str) -> int:
    start, end = day_window(DAY)
    params = {"from": format_rfc3339(start), "to": format_rfc3339(end), "limit": "1000"}
    rows = 0
    async with httpx.AsyncClient(base_url=url, auth=(username, password)) as http:
        while True:
            page = (await http.get(spec.LIST_PATH, params=params)).json()
            rows += len(page["transactions"])
            if not page["nextCursor"]:
                return rows
            params["cursor"] = page["nextCursor"]


async def report(url: str, username: str, password: str) -> int:
    async with TerminalClient(url, username, password) as client:
        eod = await end_of_day(client, DAY)
    return eod.charges_count + eod.reversed_count


def timed(fn, *args) -> tuple[float, float, int]:  # type: ignore[no-untyped-def]
    """Wall-clock seconds, this process's CPU seconds, and the rows seen."""
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    rows = asyncio.run(fn(*args))
    return time.perf_counter() - t0, time.process_time() - c0, rows


def peak_kib(fn, url: str, username: str, password: str) -> float:  # type: ignore[no-untyped-def]
    gc.collect()
    tracemalloc.start()
    asyncio.run(fn(url, username, password))
    _now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024


def measure(rows: int, repeat: int) -> dict[str, float]:
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="qrpos-bench-"))
    username, password = seed(rows, tmp / "sandbox.sqlite3")
    seeded_s = time.perf_counter() - t0
    with served(tmp / "sandbox.sqlite3") as url:
        bare, ours, bare_cpu, our_cpu = [], [], [], []
        paired = []
        for n in range(repeat):
            if n % 2:
                r, r_cpu, r_rows = timed(report, url, username, password)
                b, b_cpu, b_rows = timed(bare_paging, url, username, password)
            else:
                b, b_cpu, b_rows = timed(bare_paging, url, username, password)
                r, r_cpu, r_rows = timed(report, url, username, password)
            paired.append(r / b)
            assert b_rows == r_rows == rows, (b_rows, r_rows, rows)
            bare.append(b)
            ours.append(r)
            bare_cpu.append(b_cpu)
            our_cpu.append(r_cpu)
        peak = peak_kib(report, url, username, password)
        bare_peak = peak_kib(bare_paging, url, username, password)
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "rows": rows,
        "seed_s": seeded_s,
        "bare_s": min(bare),
        "report_s": min(ours),
        "ratio": statistics.median(paired),
        "best_ratio": min(ours) / min(bare),
        "rounds": len(paired),
        # the client's own CPU (the sandbox runs in another process): steadier under load
        "cpu_ratio": min(our_cpu) / min(bare_cpu),
        "peak_kib": peak,
        "bare_peak_kib": bare_peak,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--repeat", type=int, default=5, help="paired rounds (median)")
    args = parser.parse_args(argv)
    sizes = (2_000, 6_000) if args.quick else (6_000, 60_000)
    repeat = 1 if args.quick else args.repeat
    print(
        f"end of day vs bare httpx paging (limit=1000), median of {repeat} paired rounds; "
        f"{datetime.now(UTC):%Y-%m-%d}"
    )
    results = [measure(n, repeat) for n in sizes]
    for r in results:
        print(
            f"rows {r['rows']:>7,}: bare {r['bare_s']:.3f} s, report {r['report_s']:.3f} s (best), "
            f"ratio {r['ratio']:.3f}x, median of {r['rounds']:.0f} paired rounds "
            f"(target <= {TARGET:.2f}; best of each {r['best_ratio']:.3f}x), "
            f"client CPU {r['cpu_ratio']:.2f}x, peak {r['peak_kib']:,.0f} KiB "
            f"(bare paging {r['bare_peak_kib']:,.0f} KiB) "
            f"(seeded in {r['seed_s']:.1f} s)"
        )
    small, big = results
    growth = big["peak_kib"] / small["peak_kib"]
    bare_growth = big["bare_peak_kib"] / small["bare_peak_kib"]
    print(
        f"peak memory x{growth:.2f} for x{big['rows'] / small['rows']:.0f} rows "
        f"(bare paging x{bare_growth:.2f}; linear growth would be "
        f"x{big['rows'] / small['rows']:.0f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
