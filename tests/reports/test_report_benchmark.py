"""The report benchmark runs in its quick mode and prints its figures (no timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "report.py"


def test_report_benchmark_quick_mode_prints_ratio_and_peak_memory() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any("rows   2,000" in line and "ratio" in line and "KiB" in line for line in lines)
    assert any("rows   6,000" in line for line in lines)
    assert "peak memory x" in lines[-1]
