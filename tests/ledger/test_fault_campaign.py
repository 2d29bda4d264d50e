"""The bounded fault campaign: random faults and SIGKILLs never charge twice or lose a sale."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_bounded_campaign_has_no_duplicate_and_no_lost_sale(tmp_path: Path) -> None:
    campaign = load("fault_campaign")
    figures = await campaign.campaign(24, kills=True, seed=7, workdir=tmp_path)
    print(figures.report())
    assert figures.kills >= 1 and sum(figures.faults.values()) >= 10
    assert figures.duplicates == 0
    assert figures.lost == 0
    assert figures.misattributed == 0
    assert figures.unreported == 0
    assert figures.integrity == "ok"
    assert sum(figures.states.values()) >= figures.charges
