"""The till simulator's mutation test (issue 47; docs/simulation.md): each module in
`mutants/` puts one money defect back (`reintroduce(monkeypatch)`), issue 47's four and
issue 41's two; the suite's budget of fixed seeds (`tillsim_engine.BUDGET_SEEDS`) must
break an invariant under each, and the one it names. A mutant the budget no longer finds
fails here: the story generator stopped reaching the defect."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from tillsim_engine import BUDGET_SEEDS, BUDGET_STEPS, draw_story, printed, run_story

MUTANTS_DIR = Path(__file__).parent / "mutants"
MUTANTS = sorted(p.stem for p in MUTANTS_DIR.glob("*.py") if not p.name.startswith("_"))

#: the invariant each mutant must break (a mutant missing here fails: name what finds it)
CAUGHT_BY = {
    "defect1_review_only_not_charged": "every review can be settled to the truth",
    "defect2_abandoned_refunds_stranger": "no refund of a row that is not the sale's own",
    "defect3_shift_counts_charged_abandon_as_not_charged": "a settled X/Z equals the books",
    "defect4_429_storm_paid_on_stranger": "a sale is paid only on its own charge",
    "last_round_a_refused_refund_seen_by_nobody": "nothing left open without someone told",
    "last_round_b_refund_waits_on_the_wall_clock": "every refund ends while the service answers",
}


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"tillsim_mutant_{name}", MUTANTS_DIR / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_mutant_names_the_invariant_that_finds_it() -> None:
    assert len(MUTANTS) >= 6, MUTANTS
    assert sorted(CAUGHT_BY) == MUTANTS


@pytest.mark.parametrize("name", MUTANTS)
def test_the_budget_finds_the_mutant(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _load(name).reintroduce(monkeypatch)
    found: list[str] = []
    for seed in BUDGET_SEEDS:  # the first break is enough: the rest of the budget is CPU
        story = draw_story(seed, BUDGET_STEPS)
        outcome = run_story(story)
        if outcome.broken is not None:
            print(f"mutant {name}: {printed(story, outcome, BUDGET_STEPS, name)}")
            found.append(outcome.broken.invariant)
            break
    assert found, f"no seed of the budget {BUDGET_SEEDS} breaks an invariant under {name}"
    assert found == [CAUGHT_BY.get(name)], (name, found)
