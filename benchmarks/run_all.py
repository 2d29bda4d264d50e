"""Run every long benchmark in full and print its figures (`deploy/dev.sh bench`).

Each benchmark is also a script of its own (see docs/figures.md); the test suite
runs each one in its `--quick` mode only. Pass names to run a subset:
`deploy/dev.sh bench decode report`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> arguments for the full run
BENCHMARKS: dict[str, list[str]] = {
    "decode": [],
    "fieldset": [],
    "pass_order": [],
    "stillness": ["--synthetic", "--count", "10"],
    "stack_moves": ["--draws", "300", "--even"],
    "blas_threads": ["--scenes", "5"],
    "scan_to_send": [],
    "charge_overhead": [],
    "startup": [],
    "report": [],
    "sandbox_history": [],
    "response_cap": [],
    "fault_campaign": ["--charges", "1000", "--kills"],
    "fuzz_sandbox": ["--examples", "10000"],
    "fleet": [],
    "till_sim": ["--seeds", "1-300", "--steps", "40", "--keep-going"],
    "customer_display": [],
}


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
        return 64
    failed = []
    for name in names:
        script = HERE / f"{name}.py"
        print(f"\n=== {name} ===", flush=True)
        start = time.monotonic()
        code = subprocess.call([sys.executable, str(script), *BENCHMARKS[name]])
        print(f"=== {name}: exit {code} in {time.monotonic() - start:.0f} s", flush=True)
        if code != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
