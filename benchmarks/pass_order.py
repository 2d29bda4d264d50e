"""The order of the decoder's further passes: measured per pass, then searched.

A frame the plain pass reads nothing in goes through the further passes in the order of
`qrpos.scanner.passes.PASSES` until one reads a code or the frame's budget is spent. Which
order reads the most on the first frame depends on what each pass rescues and what it
costs. This script measures both, once per pass, on the frames the plain pass misses in
the hard set and in the field set's **tuning half** (never the held-back half), then
replays the budgeted loop for any order from those measurements:

- per pass: its median time (transform and scan) and how many misses it rescues;
- the first-frame rate of the kiosk's order, at this core's speed and at 4x slower (the
  run-time budget: twelve plain passes, 12-50 ms, as `PassPlan` chooses it);
- a search (hill climbing from the kiosk's order and from a greedy one: most rescues per
  millisecond first) for an order that reads more of both sets without reading less of
  the hard set, at 1x and 4x.

The replay is a model: it sums each pass's time measured once, while the decoder times
itself on the wall clock. `hardset.py` and `fieldset.py` measure the order for real.

    python benchmarks/pass_order.py            # hard set 30 x 16, tuning half 40 x 14
    python benchmarks/pass_order.py --quick    # 3 and 3 (the test suite runs this)
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from qrpos.scanner import ZxingDecoder
from qrpos.scanner.frames import Frame
from qrpos.scanner.passes import BUDGET_PER_PLAIN, PASS_BUDGET_CAP_MS, PASS_BUDGET_MS, PASSES
from scenes.fieldscenes import field_set, render_field
from scenes.hardscenes import hard_set, render

SETS = ("hard", "field")
#: the speeds an order is judged at: this core, and a Pi 4's (about 4x slower)
SPEEDS = (1.0, 4.0)


@dataclass(frozen=True)
class Miss:
    """A frame the plain pass read nothing in: what each pass does with it."""

    rescued: dict[str, bool]
    ms: dict[str, float]


@dataclass
class Measured:
    plain_ms: list[float]
    totals: Counter[str]
    misses: dict[str, list[Miss]]


#: the kiosk's engine: `read` is its plain pass, `scan` a further pass's (which also reads
#: a code it finds but cannot decode from its sampled modules, `qrpos.scanner.resample`)
_ENGINE = ZxingDecoder(passes=())


def _timed(transform: Callable[[Frame], Frame], frame: Frame) -> tuple[list[bytes], float]:
    started = time.perf_counter()
    scan = _ENGINE.read if transform is _plain else _ENGINE.scan
    found = scan(transform(frame))
    return found, (time.perf_counter() - started) * 1000.0


def _plain(frame: Frame) -> Frame:
    return frame


def measure(hard_count: int, field_count: int) -> Measured:
    """Each pass once on every frame the plain pass misses, in both sets."""
    out = Measured([], Counter(), {name: [] for name in SETS})
    frames: dict[str, list[tuple[bytes, Frame]]] = {
        "hard": [(s.payload, render(s)) for s in hard_set(hard_count)],
        "field": [(s.payload, render_field(s)) for s in field_set(field_count, half="tune")],
    }
    _ENGINE.read(frames["hard"][0][1])  # the library's first call
    for name, scenes in frames.items():
        for payload, frame in scenes:
            out.totals[name] += 1
            found, ms = _timed(_plain, frame)
            out.plain_ms.append(ms)
            if payload in found:
                continue
            rescued, cost = {}, {}
            for pass_name, transform in PASSES.items():
                found, ms = _timed(transform, frame)
                rescued[pass_name], cost[pass_name] = payload in found, ms
            out.misses[name].append(Miss(rescued, cost))
    return out


def first_frame_rates(m: Measured, order: Sequence[str], slower: float) -> dict[str, float]:
    """The first-frame rate of each set if the passes ran in `order` on a core `slower`
    times this one, replaying the budgeted loop of `PassPlan.decode`."""
    plain = statistics.median(m.plain_ms) * slower
    budget = min(PASS_BUDGET_CAP_MS, max(PASS_BUDGET_MS, BUDGET_PER_PLAIN * plain))
    rates = {}
    for name in SETS:
        read = m.totals[name] - len(m.misses[name])
        for miss in m.misses[name]:
            spent = plain
            for pass_name in order:
                spent += miss.ms[pass_name] * slower
                if miss.rescued[pass_name]:
                    read += 1
                    break
                if spent >= budget:
                    break
        rates[name] = read / max(1, m.totals[name])
    return rates


def _greedy(m: Measured) -> list[str]:
    """Most rescues per millisecond first, among the misses still left."""
    left = [miss for name in SETS for miss in m.misses[name]]
    order: list[str] = []
    while len(order) < len(PASSES):
        candidates = [n for n in PASSES if n not in order]

        def worth(n: str, left: list[Miss] = left) -> float:
            gain = sum(miss.rescued[n] for miss in left)
            cost = statistics.median(miss.ms[n] for miss in left) if left else 1.0
            return gain / max(cost, 1e-6)

        best = max(candidates, key=worth)
        order.append(best)
        left = [miss for miss in left if not miss.rescued[best]]
    return order


def search(m: Measured, start: Sequence[str], *, steps: int = 600, seed: int = 1) -> list[str]:
    """Hill climbing over swaps and moves: more of both sets read on the first frame at
    1x and 4x, never less of the hard set than `start` reads at either speed."""
    floor = {s: first_frame_rates(m, start, s)["hard"] for s in SPEEDS}

    def value(order: Sequence[str]) -> tuple[bool, float]:
        rates = {s: first_frame_rates(m, order, s) for s in SPEEDS}
        keeps = all(rates[s]["hard"] >= floor[s] - 1e-9 for s in SPEEDS)
        return keeps, sum(sum(r.values()) for r in rates.values())

    rnd = random.Random(seed)
    best, best_value = list(start), value(start)
    for origin in (list(start), _greedy(m)):
        order, current = origin, value(origin)
        for _ in range(steps):
            i, j = rnd.sample(range(len(order)), 2)
            candidate = list(order)
            if rnd.random() < 0.5:
                candidate[i], candidate[j] = candidate[j], candidate[i]
            else:
                candidate.insert(j, candidate.pop(i))
            v = value(candidate)
            if v > current:
                order, current = candidate, v
        if current > best_value:
            best, best_value = order, current
    return best


def _rates_line(m: Measured, order: Sequence[str]) -> str:
    parts = []
    for s in SPEEDS:
        r = first_frame_rates(m, order, s)
        parts.append(f"{s:g}x: hard {r['hard']:.1%}, field {r['field']:.1%}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 scenes per condition")
    parser.add_argument(
        "--start", help="the order to judge and search from, comma-separated (the kiosk's)"
    )
    args = parser.parse_args(argv)
    hard_count, field_count = (3, 3) if args.quick else (30, 40)
    started = time.perf_counter()
    m = measure(hard_count, field_count)
    misses = {name: len(m.misses[name]) for name in SETS}
    print(
        f"hard set {m.totals['hard']} scenes ({misses['hard']} plain-pass misses), field set"
        f" tuning half {m.totals['field']} ({misses['field']}); plain pass median"
        f" {statistics.median(m.plain_ms):.2f} ms ({time.perf_counter() - started:.0f} s)"
    )
    every = [miss for name in SETS for miss in m.misses[name]]
    print(f"{'pass':<18}{'median ms':>10}{'rescues':>9}")
    for name in PASSES:
        ms = statistics.median(miss.ms[name] for miss in every) if every else 0.0
        print(f"{name:<18}{ms:>10.2f}{sum(miss.rescued[name] for miss in every):>9}")
    kiosk = args.start.split(",") if args.start else list(PASSES)
    if sorted(kiosk) != sorted(PASSES):
        parser.error(f"--start must name every pass once: {', '.join(PASSES)}")
    print(f"{'given' if args.start else 'kiosk'}'s order: {', '.join(kiosk)}")
    print(f"  first frame (replayed): {_rates_line(m, kiosk)}")
    best = search(m, kiosk)
    print(f"searched order: {', '.join(best)}")
    print(f"  first frame (replayed): {_rates_line(m, best)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
