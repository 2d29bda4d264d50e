"""Every qrpos process uses one BLAS thread (`qrpos/__init__.py`): numpy's OpenBLAS threads
stall the decoder's small fits when the cores are busy (benchmarks/blas_threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: run in a fresh interpreter: import qrpos, then numpy's BLAS, and print its thread count
_PROBE = r"""
import ctypes, qrpos, numpy.linalg
paths = {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()}
for path in sorted(paths):
    lib = ctypes.CDLL(path)
    for symbol in ("openblas_get_num_threads64_", "openblas_get_num_threads"):
        if hasattr(lib, symbol):
            print(getattr(lib, symbol)())
            raise SystemExit(0)
print("no openblas")
"""


def _threads(**env: str) -> str:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    }
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    said = done.stdout.strip()
    if said == "no openblas":
        pytest.skip("this numpy is not linked to OpenBLAS")
    return said


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts one thread")
def test_a_qrpos_process_uses_one_blas_thread_on_a_machine_of_many_cores() -> None:
    assert _threads() == "1"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts one thread")
def test_a_thread_count_the_environment_sets_is_kept() -> None:
    assert _threads(OPENBLAS_NUM_THREADS="2") == "2"
