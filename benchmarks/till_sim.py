"""The till simulator's command line (issue 47; docs/simulation.md).

python benchmarks/till_sim.py --seed 7 --steps 40            (one story, its verdict)
python benchmarks/till_sim.py --seed 7 --steps 40 --keep 3,9 --no-fault 9:0 --log
python benchmarks/till_sim.py --seeds 1-200 --steps 40 --shrink   (many seeds)
python benchmarks/till_sim.py --seed 7 --steps 30 --mutant defect2_abandoned_refunds_stranger
python benchmarks/till_sim.py --seeds 1-20 --steps 30 --plain     (no episodes: older stories)
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tillsim"))

from tillsim_engine import printed, run_story, shrink, story_from

TILLSIM = Path(__file__).resolve().parents[1] / "tests" / "tillsim"


def _seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(x) for x in text.split(",")]


def _reintroduce(name: str) -> None:
    """Put a mutant's defect back for this run (tests/tillsim/mutants/NAME.py)."""
    import pytest  # a test dependency: only a mutant's run needs it

    spec = importlib.util.spec_from_file_location(name, TILLSIM / "mutants" / f"{name}.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no mutant {name} in {TILLSIM / 'mutants'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.reintroduce(pytest.MonkeyPatch())  # undone when the process ends


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int)
    parser.add_argument("--seeds", type=_seeds)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--keep", default=None)
    parser.add_argument("--no-fault", default="")
    parser.add_argument("--log", action="store_true", help="print the event log")
    parser.add_argument("--shrink", action="store_true")
    parser.add_argument("--keep-going", action="store_true", help="count breaks, do not stop")
    parser.add_argument(
        "--plain", action="store_true", help="no episodes: the stories drawn before them"
    )
    parser.add_argument("--mutant", help="play under a mutant of tests/tillsim/mutants/")
    args = parser.parse_args(argv)
    if args.mutant:
        _reintroduce(args.mutant)
    logging.getLogger("qrpos").setLevel(logging.CRITICAL)  # the story is the log here
    seeds = args.seeds or [args.seed if args.seed is not None else 1]
    keep = [int(x) for x in args.keep.split(",")] if args.keep else None
    no_fault = [x for x in args.no_fault.split(",") if x]
    started, cpu = time.monotonic(), time.process_time()
    sales = broken = 0
    by_invariant: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for seed in seeds:
        story = story_from(seed, args.steps, keep, no_fault, episodes=not args.plain)
        outcome = run_story(story)
        sales += outcome.sales
        for reason, n in outcome.reviews.items():
            reasons[reason] = reasons.get(reason, 0) + n
        if args.log:
            print("\n".join(outcome.events))
        if outcome.broken is None:
            continue
        broken += 1
        by_invariant[outcome.broken.invariant] = by_invariant.get(outcome.broken.invariant, 0) + 1
        print(f"seed {seed}: {outcome.broken}", flush=True)
        if args.shrink:
            small = shrink(story, outcome.broken.invariant)
            print(printed(small, run_story(small), args.steps, args.mutant), flush=True)
        if not args.keep_going and len(seeds) == 1:
            break
    cpu_s = time.process_time() - cpu
    print(
        f"{len(seeds)} stories, {sales} sales, {broken} broken {by_invariant}; "
        f"reviews {reasons}; wall {time.monotonic() - started:.1f} s, cpu {cpu_s:.1f} s, "
        f"{sales / max(cpu_s, 1e-9) * 60:.0f} sales per CPU-minute"
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
