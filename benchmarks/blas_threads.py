"""The decoder's locate pass with one BLAS thread against one a core, on busy cores.

numpy's OpenBLAS starts a thread per core. The locate pass fits small perspective
matrices; when every core is busy, OpenBLAS's threads wait on each other and the pass
stalls. qrpos sets one thread per process (`qrpos/__init__.py`); this measures why:
the same frames, the same decoder, in a fresh process each, with a busy process on every
core beside them (`--hogs 0` for idle cores). Prints each time and their ratio.

    .venv/bin/python benchmarks/blas_threads.py [--scenes 10] [--hogs N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: the locate pass on the scenes of tests/scanner/test_locate.py's small-module test
_WORK = r"""
import sys, time
sys.path[:0] = [{tests!r}, {bench!r}]
import numpy as np
from qrpos.scanner.passes import PASSES
from scanner.test_locate import _ENGINE, _scene
read, started = 0, time.monotonic()
for seed in range({scenes}):
    rng = np.random.default_rng(seed + 100)
    size = int(rng.integers(24, 40))
    payload = b"vqr_" + rng.integers(65, 90, size).astype(np.uint8).tobytes()
    module = float(rng.uniform(1.4, 1.9))
    skew = rng.uniform(-0.5, 0.5, (4, 2))
    frame, _ = _scene(payload, float(rng.uniform(0, 360)), module, skew, 0.7 / module, seed)
    read += _ENGINE.scan(PASSES["locate"](frame)) == [payload]
print(read, time.monotonic() - started)
"""


def _hog() -> None:
    while True:
        pass


def _run(threads: int, scenes: int, timeout_s: float) -> tuple[int, float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    code = _WORK.format(
        tests=str(HERE.parent / "tests"), bench=str(HERE),
        scenes=scenes,
    )  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True,
            timeout=timeout_s, check=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return -1, float("inf")
    read, seconds = done.stdout.split()
    return int(read), float(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", type=int, default=10)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for hog in hogs:
        hog.start()
    try:
        one = _run(1, args.scenes, args.timeout)
        many = _run(cores, args.scenes, args.timeout)
    finally:
        for hog in hogs:
            hog.terminate()
    print(
        f"locate pass, {args.scenes} scenes, {args.hogs} busy process(es) on {cores} cores: "
        f"one BLAS thread {one[1]:.1f} s ({one[0]} read), {cores} threads {many[1]:.1f} s "
        f"({many[0]} read): {many[1] / one[1]:.1f}x slower with a thread a core"
    )
    return 0 if one[0] == many[0] or many[0] < 0 else 1


if __name__ == "__main__":
    sys.exit(main())
