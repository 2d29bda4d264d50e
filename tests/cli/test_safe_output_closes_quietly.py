"""`safe_output`'s wrapper outlives the stream it wraps (a logging handler made during a
command keeps it; a test's captured output, or a pipe at exit, is closed first): closing
it, and collecting it, must raise nothing. Python 3.13 reports an exception raised from
an `io` object's finalizer ("Exception ignored in", pytest's
PytestUnraisableExceptionWarning); 3.11 does only in its development mode (`-X dev`), in
which the subprocess below runs."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import pytest

from qrpos.cli.usage import safe_output

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")

#: what a command run in-process leaves behind, then its collection, in a fresh process
OUTLIVES = textwrap.dedent(
    """
    import gc, io, sys

    reported = []
    sys.unraisablehook = reported.append
    captured = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    sys.stdout = captured
    from qrpos.cli.usage import safe_output

    with safe_output():
        kept = sys.stdout  # as a StreamHandler made during the command keeps it
        print("said")
    sys.stdout = sys.__stdout__
    captured.close()
    del kept
    gc.collect()
    print(len(reported), *(repr(r.exc_value) for r in reported))
    """
)


def test_the_wrapper_closes_without_touching_the_closed_stream_it_wrapped() -> None:
    inner = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    saved = sys.stdout
    sys.stdout = inner
    try:
        with safe_output():
            kept = sys.stdout
            print("\x1b]0;title\x07said")
    finally:
        sys.stdout = saved
    inner.seek(0)
    shown = inner.read()
    assert "\x1b" not in shown and shown.endswith("said\n")  # shown as text, not acted on
    inner.close()
    kept.close()  # raised ValueError (a flush of the closed stream) before
    assert kept.closed


def test_collecting_the_wrapper_after_its_stream_closed_reports_nothing() -> None:
    """The finalizer's path, in a process that reports what finalizers raise (as 3.13
    always does)."""
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", OUTLIVES],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0", done.stdout
