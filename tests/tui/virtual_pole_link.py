"""The display tests' virtual pole display (tests/display/virtual_pole.py), for the kiosk
tests: a pseudo-terminal behind a link, keeping every byte sent to it."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_SOURCE = Path(__file__).parent.parent / "display" / "virtual_pole.py"


@contextlib.contextmanager
def pole_pair(tmp_path: Path) -> Iterator[Any]:
    """A plugged-in virtual pole display at `tmp_path/ttyPOLE`, unplugged on exit."""
    spec = importlib.util.spec_from_file_location("virtual_pole_for_tui", _SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pole = module.VirtualPole(tmp_path / "ttyPOLE")
    try:
        yield pole
    finally:
        pole.unplug()
