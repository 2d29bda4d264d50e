"""The till simulator's tests share one rule: the simulated kiosk's logs are off for the
test (the story is the log), and the level is given back after it: a level left at
CRITICAL silenced every later test's kiosk.log on the same worker."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    qrpos = logging.getLogger("qrpos")
    before = qrpos.level
    qrpos.setLevel(logging.CRITICAL)
    yield
    qrpos.setLevel(before)
