"""The memory a piece of the decoder takes while it runs, as tracemalloc sees it (numpy's
buffers included)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from qrpos.scanner.frames import Frame
from qrpos.scanner.passes import PASSES

T = TypeVar("T")


def traced_peak(run: Callable[[], T]) -> tuple[T, int]:
    """`run()`'s result and the peak of the memory it allocated, in bytes. Run it once
    before, untraced, so numpy's first-use caches are not counted as the code's."""
    tracemalloc.start()
    try:
        result = run()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def pass_peaks(frame: Frame, *names: str) -> dict[str, int]:
    """Each named decode pass's traced peak on `frame`, in bytes (each run once untraced
    first)."""
    peaks: dict[str, int] = {}
    for name in names:
        PASSES[name](frame)
        peaks[name] = traced_peak(partial(PASSES[name], frame))[1]
    return peaks
