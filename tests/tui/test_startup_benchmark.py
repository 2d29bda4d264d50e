"""The start-up benchmark runs (quick mode) and prints its figures as ratios."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "startup.py"


def test_startup_benchmark_quick_prints_ratio_and_rss() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        check=True,
        capture_output=True,
        text=True,
        timeout=90,
    ).stdout
    assert "start time ratio qrpos demo / minimal:" in out
    assert "qrpos demo peak RSS:" in out
