"""Fleet traffic model (SimPy): N kiosks over a business day against the shared ceiling.

Each simulated kiosk runs the kiosk's *real* decisions, imported from qrpos:

- the VAT follow-up policy (`qrpos.reports.vat_watch`: `BatchedFollowPolicy`, or
  `FixedIntervalPolicy` for the "before" column), its 429 backoff and the yield to a sale
  in progress (`SALE_YIELD_S`);
- the charge's retry backoff and Retry-After handling (`qrpos.ledger.policy.RetryPolicy`);
- the reachability probe (`qrpos.service.contact.probe_due`; "before": a probe every 60 s);
- the gateway is the sandbox's own `TokenBucket` (100/s, burst 200) on the model's clock.

The day (local time): quiet morning, a lunch peak of one sale per kiosk every 2 min
(11:30-13:30), an evening bump, end-of-day reports at closing (one history page per 1,000
rows), VAT issue delays from seconds to hours (70 % 5-60 s, 25 % 1-30 min, 5 % 1-4 h),
owners who open the history now and then (an on-demand poll), and a 429 storm: another
merchant's burst of 150 rps for 5 min at 12:30. Other merchants' charges draw on the same
bucket (20-30 rps, retrying on 429 with the same backoff).

Aggregation (mean field): up to `--sample` kiosks are simulated one by one (a SimPy
process per activity); a larger fleet is their mirror, and every count is scaled back by
N/sample. The gateway is stepped every 0.1 s: the sample's recent request rate (smoothed
over 30 s) times N/sample, plus other merchants' charges (Poisson-sized chunks, a rejected
share retried after the ledger's backoff), are drawn from the bucket as a fluid, and the
share that got tokens is the chance that each request of the sample passes in the next
step (a 429 otherwise, Retry-After 1 s). So every request meets the congestion the whole
fleet makes, against a bucket of the real size and burst.

    .venv/bin/python benchmarks/fleet.py            # 100, 1,000, 5,000, 20,000 kiosks
    .venv/bin/python benchmarks/fleet.py --quick    # two small fleets, lunch only (suite)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_sim import DAY, PEAK, Fleet, H, Scenario
from qrpos import spec
from qrpos.reports.vat_watch import (
    BatchedFollowPolicy,
    FixedIntervalPolicy,
    FollowPolicy,
)

__all__ = ["Fleet", "Row", "Scenario", "simulate"]


@dataclass(frozen=True)
class Row:
    """The table's figures for one fleet size and one policy (whole-fleet numbers)."""

    kiosks: int
    policy: str
    charge_rps: float
    background_rps: float
    probe_rps: float
    others_rps: float
    charges_429: float
    bg_per_kiosk_h_peak: float
    bg_per_kiosk_h_day: float
    receipt_p50_s: float
    receipt_p95_s: float


BACKGROUND = ("poll", "owner", "probe", "report")


def simulate(sc: Scenario) -> Row:
    """Run one scenario and reduce it to a `Row` (counts scaled back to the fleet)."""
    tally = Fleet(sc).run()
    up = 1.0 / sc.scale
    peak_s = PEAK[1] - PEAK[0]
    day_h = (sc.day[-1][1] - sc.day[0][0]) + (0.5 if sc.reports else 0.0)

    def peak(kinds: tuple[str, ...]) -> float:
        return sum(tally.sent[(k, True)] for k in kinds) * up / peak_s

    bg_day = sum(n for (k, _), n in tally.sent.items() if k in BACKGROUND) * up
    lat = sorted(tally.latencies) or [math.nan]
    return Row(
        kiosks=sc.kiosks,
        policy=sc.policy.name,
        charge_rps=peak(("charge",)),
        background_rps=peak(BACKGROUND),
        probe_rps=peak(("probe",)),
        others_rps=peak(("others",)),
        charges_429=tally.peak_sales_429 / max(1, tally.peak_sales),
        bg_per_kiosk_h_peak=peak(BACKGROUND) * H / sc.kiosks,
        bg_per_kiosk_h_day=bg_day / sc.kiosks / day_h,
        receipt_p50_s=statistics.median(lat),
        receipt_p95_s=lat[min(len(lat) - 1, int(0.95 * len(lat)))],
    )


POLICIES: dict[str, tuple[FollowPolicy, bool]] = {
    "before": (FixedIntervalPolicy(), False),
    "after": (BatchedFollowPolicy(), True),
}


def ceiling(rows: list[Row]) -> int:
    """Fleet size at which the peak's offered load reaches 100 rps (from the per-kiosk
    rates of the smallest fleet, where nothing is throttled)."""
    small = min(rows, key=lambda r: r.kiosks)
    per_kiosk = (small.charge_rps + small.background_rps) / small.kiosks
    room = spec.RATE_SUSTAINED_RPS - max(rps for start, _, _, rps in DAY if start * H == PEAK[0])
    return int(room / per_kiosk) if per_kiosk > 0 else 0


def _fmt_s(s: float) -> str:
    return "-" if math.isnan(s) else (f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min")


def print_table(rows: list[Row]) -> None:
    print(
        "| kiosks | policy | charges rps | background rps (probes) | other merchants rps "
        "| sales meeting a 429 | background req/kiosk/h peak · day | receipt shown p50 · p95 |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.kiosks:,} | {r.policy} | {r.charge_rps:.1f} | {r.background_rps:.1f} "
            f"({r.probe_rps:.1f}) | {r.others_rps:.1f} | {r.charges_429:.1%} "
            f"| {r.bg_per_kiosk_h_peak:.1f} · {r.bg_per_kiosk_h_day:.1f} "
            f"| {_fmt_s(r.receipt_p50_s)} · {_fmt_s(r.receipt_p95_s)} |"
        )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="two small fleets, lunch only")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1_000, 5_000, 20_000])
    ap.add_argument("--sample", type=int, default=400, help="kiosks simulated one by one")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    sizes, sample, day = args.sizes, args.sample, DAY
    if args.quick:
        sizes, sample, day = [50, 5_000], 50, ((11.5, 13.5, 120.0, 30.0),)
    print(f"fleet model: sizes {sizes}, sample {sample} kiosks, seed {args.seed}")
    rows: dict[str, list[Row]] = {}
    for label, (policy, passive) in POLICIES.items():
        for n in sizes:
            t0 = time.perf_counter()
            sc = Scenario(n, policy, passive, sample=sample, day=day, seed=args.seed)
            sc.reports = not args.quick
            rows.setdefault(label, []).append(simulate(sc))
            print(f"  {label} {n:,}: simulated in {time.perf_counter() - t0:.1f} s", flush=True)
    print("\nAt the lunch peak (11:30-13:30 local, with the 12:30 storm):\n")
    print_table([r for label in POLICIES for r in rows[label]])
    print()
    for label in POLICIES:
        n = ceiling(rows[label])
        bg = [r for r in rows[label] if r.kiosks == 5_000]
        note = f"; 5,000 kiosks: background {bg[0].background_rps:.1f} rps" if bg else ""
        print(
            f"{label} ({rows[label][0].policy}): the ceiling is reached at about {n:,} kiosks{note}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
