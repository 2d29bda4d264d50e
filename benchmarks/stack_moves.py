"""Draw phones moved by whole pixels at random and print how far the frame stack's mean
lies from the clean scene (tests/scanner/test_stack.py's property, many more draws than
the suite's 30): the worst draws, and every one over the suite's bound.

    python benchmarks/stack_moves.py [--draws 300] [--seed 3] [--even]

--even: moves of an even number of pixels only (the property the suite holds; odd moves
are a known limitation, its strict xfail says why). Figures of 2026-11-28 (bound 3.40):
`--even`, 300 draws, worst 3.31; any moves, `--seed 21`, 300 draws, none over (worst
3.19); two earlier searches of any moves each met one over within a few hundred draws
(3.47 and 3.58).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE), str(HERE.parent / "tests" / "scanner")]

from scanner.test_stack import _stacked_noise  # noqa: E402

BOUND = 0.85 * 4.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--even", action="store_true")
    args = parser.parse_args()
    draw = np.random.default_rng(args.seed)
    results: list[tuple[float, int, list[tuple[int, int]]]] = []
    started = time.monotonic()
    for _ in range(args.draws):
        seed = int(draw.integers(0, 10_001))
        if args.even:
            moves = [
                (2 * int(draw.integers(-2, 3)), 2 * int(draw.integers(-2, 3)))
                for _ in range(int(draw.integers(2, 7)))
            ]
        else:
            moves = [
                (int(draw.integers(-5, 6)), int(draw.integers(-5, 6)))
                for _ in range(int(draw.integers(2, 7)))
            ]
        rms = _stacked_noise(seed, moves)
        results.append((rms, seed, moves))
        if rms >= BOUND:
            print(f"over the bound: {rms:.3f} seed {seed} moves {moves}", flush=True)
    results.sort(reverse=True)
    over = sum(r >= BOUND for r, _, _ in results)
    print(
        f"{args.draws} draws ({'even' if args.even else 'any'} moves), "
        f"{time.monotonic() - started:.0f} s; over {BOUND:.2f}: {over}"
    )
    for rms, seed, moves in results[:5]:
        print(f"  {rms:.3f}  seed {seed}  moves {moves}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
