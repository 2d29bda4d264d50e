"""The till simulator's command line (issue 47; docs/simulation.md).

python benchmarks/till_sim.py --seed 7 --steps 40            (one story, its verdict)
python benchmarks/till_sim.py --seed 7 --steps 40 --keep 3,9 --no-fault 9:0 --log
python benchmarks/till_sim.py --seeds 1-200 --steps 40 --shrink   (many seeds)
python benchmarks/till_sim.py --seed 7 --steps 30 --mutant defect2_abandoned_refunds_stranger
python benchmarks/till_sim.py --seeds 1-20 --steps 30 --plain     (no episodes: older stories)
python benchmarks/till_sim.py --seeds 10001-85000 --plain --keep-going --jobs 2   (the long run)

With --jobs N (1 or more) the seeds are played in chunks of --chunk stories by N processes:
a line per chunk as it ends (its seeds, sales, breaks: a run cut short still says how far
it got), then the totals. The figures are one process's: each story is deterministic.
QRPOS_TILLSIM_TMP names the folder of the stories' outboxes (default /dev/shm).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import logging
import multiprocessing
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


@dataclasses.dataclass
class Tally:
    """What a run of stories found: sales, breaks by invariant, reviews by reason."""

    stories: int = 0
    sales: int = 0
    broken: int = 0
    cpu_s: float = 0.0
    by_invariant: dict[str, int] = dataclasses.field(default_factory=dict)
    reasons: dict[str, int] = dataclasses.field(default_factory=dict)
    lines: list[str] = dataclasses.field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.stories += other.stories
        self.sales += other.sales
        self.broken += other.broken
        self.cpu_s += other.cpu_s
        for name, n in other.by_invariant.items():
            self.by_invariant[name] = self.by_invariant.get(name, 0) + n
        for reason, n in other.reasons.items():
            self.reasons[reason] = self.reasons.get(reason, 0) + n


def _chunk(job: tuple[list[int], int, bool, str | None]) -> tuple[list[int], Tally]:
    """Play one chunk of seeds in a worker process (a break is counted, never shrunk)."""
    seeds, steps, plain, mutant = job
    if mutant:
        _reintroduce(mutant)
    logging.getLogger("qrpos").setLevel(logging.CRITICAL)
    cpu = time.process_time()
    tally = Tally()
    for seed in seeds:
        outcome = run_story(story_from(seed, steps, None, [], episodes=not plain))
        tally.stories += 1
        tally.sales += outcome.sales
        for reason, n in outcome.reviews.items():
            tally.reasons[reason] = tally.reasons.get(reason, 0) + n
        if outcome.broken is not None:
            tally.broken += 1
            name = outcome.broken.invariant
            tally.by_invariant[name] = tally.by_invariant.get(name, 0) + 1
            tally.lines.append(f"seed {seed}: {outcome.broken}")
    tally.cpu_s = time.process_time() - cpu
    return seeds, tally


def _parallel(args: argparse.Namespace, seeds: list[int]) -> int:
    chunks = [seeds[i : i + args.chunk] for i in range(0, len(seeds), args.chunk)]
    jobs = [(chunk, args.steps, args.plain, args.mutant) for chunk in chunks]
    started = time.monotonic()
    total = Tally()
    # fork: the workers start with the engine imported (each story builds its own world)
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for done, tally in pool.imap_unordered(_chunk, jobs):
            total.add(tally)
            for line in tally.lines:
                print(line, flush=True)
            print(
                f"chunk {done[0]}-{done[-1]}: {tally.sales} sales, {tally.broken} broken; "
                f"so far {total.stories} stories, {total.sales} sales, {total.broken} broken, "
                f"reviews {total.reasons}, cpu {total.cpu_s:.0f} s, "
                f"wall {time.monotonic() - started:.0f} s",
                flush=True,
            )
    wall = time.monotonic() - started
    print(
        f"{total.stories} stories, {total.sales} sales, {total.broken} broken "
        f"{total.by_invariant}; reviews {total.reasons}; wall {wall:.1f} s with {args.jobs} "
        f"processes, cpu {total.cpu_s:.1f} s, "
        f"{total.sales / max(total.cpu_s, 1e-9) * 60:.0f} sales per CPU-minute"
    )
    return 1 if total.broken else 0


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
    parser.add_argument("--jobs", type=int, help="processes playing chunks of seeds")
    parser.add_argument("--chunk", type=int, default=200, help="stories per chunk (--jobs)")
    args = parser.parse_args(argv)
    if args.jobs:
        if args.keep or args.no_fault or args.log or args.shrink:
            parser.error("--jobs plays whole stories: no --keep, --no-fault, --log, --shrink")
        return _parallel(args, args.seeds or [args.seed if args.seed is not None else 1])
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
