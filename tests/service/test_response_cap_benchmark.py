"""The response-cap benchmark runs (quick mode): the capped client holds a fraction of
what reading the hostile reply whole takes, and still answers Unresolved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "response_cap.py"


def test_response_cap_benchmark_quick_mode_runs_and_reports_the_ratio() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "capped peak vs read whole:" in result.stdout
    assert "outcome:                        Unresolved" in result.stdout
