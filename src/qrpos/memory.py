"""The C heap of a long-running kiosk: pages freed by frame-sized buffers go back.

numpy's frames and their temporaries are allocated by glibc's malloc. Without care the
kiosk keeps the pages of every large temporary it ever freed (in each thread's heap),
and its resident memory grows with the decoder's passes and the demo's rendering. No
numpy here: the kiosk pins the threshold before its first screen, where numpy would
cost the start-up its import.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc: its allocator is not the one to nudge
        return None
    return trim


_TRIM = _malloc_trim()
#: glibc's mallopt parameter for the mmap threshold
_M_MMAP_THRESHOLD = -3
#: blocks this large or larger get pages of their own, returned when freed
MMAP_THRESHOLD_BYTES = 2 * 1024 * 1024


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Pin glibc's mmap threshold at `threshold` bytes; True if it was set.

    By default glibc raises the threshold to the size of every large block freed (up to
    32 MB), so after the first frame-sized float buffer each later one is carved from a
    thread's heap and its pages stay with the process when freed: the demo's peak memory
    through a sale was 97 MB, 89 MB with the threshold pinned at 2 MiB
    (`benchmarks/startup.py`). Blocks under 2 MiB (a 640x480 frame and its 16-bit
    temporaries) stay on the heap, so decoding keeps its speed (hard set, 10 scenes a
    condition: median 1.22 ms against 1.19 ms, p95 12.9 ms against 12.4 ms); pinned at
    glibc's initial 128 KiB, every frame temporary is mapped and zeroed afresh (p95 with
    every pass 25 ms against 13 ms, and fewer passes fit a frame's budget). Measured
    2026-11-26 with MALLOC_MMAP_THRESHOLD_ on `benchmarks/hardset.py --count 10`.
    Not glibc: nothing to do.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's `malloc_trim`).

    The further decode passes allocate a few frame-sized temporaries per frame; glibc keeps
    what they freed in the decode thread's own heap, and the kiosk's resident memory grew
    by ~20 MB over a sale (benchmarks/startup.py). Trimming after such a frame costs
    about 0.4 ms. With the threshold pinned (`fix_mmap_threshold`) less is kept; the
    trim still returns what blocks under it left behind.
    """
    if _TRIM is not None:
        _TRIM(0)
