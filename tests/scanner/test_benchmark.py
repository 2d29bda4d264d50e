"""The decode benchmark runs in its quick mode and prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "decode.py"


def test_decode_benchmark_quick_prints_time_and_detection_for_pipeline_and_baseline() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {
        (m["name"].strip(), m["size"]): m
        for m in re.finditer(
            r"^(?P<name>kiosk/\w+(?: \(default\))?|baseline pyzbar\.decode)\s+(?P<size>\d+x\d+)"
            r"\s+(?P<median>[\d.]+)\s+(?P<p95>[\d.]+)\s+(?P<rate>[\d.]+)%\s+(?P<ratio>[\d.]+)x$",
            done.stdout,
            re.MULTILINE,
        )
    }
    for size in ("640x480", "1280x720"):
        assert ("kiosk/zxing (default)", size) in rows
        assert ("kiosk/zbar", size) in rows
        assert ("baseline pyzbar.decode", size) in rows
        assert float(rows[("baseline pyzbar.decode", size)]["ratio"]) == 1.0
        # the generated set is readable: the kiosk pipeline finds (nearly) every code
        assert float(rows[("kiosk/zxing (default)", size)]["rate"]) >= 90.0
    assert "target 640x480: detection" in done.stdout
