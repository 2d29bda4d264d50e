"""The overhead benchmark runs in its --quick mode and prints its figures (no timing asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "charge_overhead.py"


def test_quick_overhead_benchmark_prints_ratio_and_commit_time(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"ratio\s+\d+\.\d+x", done.stdout)
    assert re.search(r"outbox commit\s+\d+\.\d+ ms median \(2 per charge\)", done.stdout)
    assert "20 of each kind" in done.stdout
