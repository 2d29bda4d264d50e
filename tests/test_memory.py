"""The C heap's pages come back: the kiosk pins glibc's mmap threshold (`qrpos.memory`),
so a frame-sized buffer freed is memory the system has again, whatever came before it.
Each check runs in a process of its own (the threshold is process-wide)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="glibc's allocator is the one pinned"
)

#: a 6 MiB frame-like array freed (glibc then raises its threshold above it, unless pinned), then
#: three 3 MiB blocks written and freed: how much of them the process keeps
_KEPT_AFTER_FREE = """
import sys
import numpy as np
from qrpos import memory

def rss_kib() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

if sys.argv[1] == "pinned":
    assert memory.fix_mmap_threshold()
big = np.ones(6 << 20, np.uint8)
del big
before = rss_kib()
blocks = [np.ones(3 << 20, np.uint8) for _ in range(3)]
del blocks
print(rss_kib() - before)
"""


def _kept_kib(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _KEPT_AFTER_FREE, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


def test_pinned_threshold_gives_frame_sized_buffers_back() -> None:
    # glibc's own rule keeps them (the reason for the pin); pinned, they go back
    assert _kept_kib("default") > 6 * 1024
    assert _kept_kib("pinned") < 1024


def test_the_kiosk_pins_it_before_its_app_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib

    from qrpos import memory
    from qrpos.config import Config
    from qrpos.kiosk import launch
    from qrpos.tui.app import KioskApp

    calls: list[str] = []

    def pin() -> bool:
        calls.append("pin")
        return True

    monkeypatch.setattr(memory, "fix_mmap_threshold", pin)
    monkeypatch.setattr(KioskApp, "run", lambda self, *a, **k: calls.append("run"))

    def factory(on_step: object) -> contextlib.AbstractContextManager[object]:
        raise AssertionError("the app did not run: no services are built")

    launch.run_kiosk(Config(), factory)  # type: ignore[arg-type]
    assert calls == ["pin", "run"]
