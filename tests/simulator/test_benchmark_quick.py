"""The sandbox history benchmark runs (quick mode) and lists every seeded row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sandbox_history.py"


def test_history_benchmark_quick_mode_lists_every_row() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rows seeded:               6000" in result.stdout
    assert "deepest page vs first" in result.stdout
