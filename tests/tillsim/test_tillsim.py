"""The till simulator (issue 47; docs/simulation.md): one seed replays one story byte for
byte, and the budget's fixed seeds play to the end of the day with no invariant broken
(one fresh seed too, printing every invariant broken with the command that replays it)."""

from __future__ import annotations

import time

import pytest
from tillsim_engine import BUDGET_SEEDS, BUDGET_STEPS, Broken, draw_story, printed, run_story

STEPS = BUDGET_STEPS

#: invariants main still breaks on some seeds, under triage in src/ (docs/simulation.md): a
#: fresh seed that meets one of them is reported (xfail, with its replay), any other break
#: fails. Empty since the stamps-ahead look-up (seeds 17, 21, 74) and the refused refund of
#: a named row (seed 41) were fixed.
KNOWN_OPEN: tuple[str, ...] = ()


def test_the_same_seed_replays_the_same_story_byte_for_byte() -> None:
    first = run_story(draw_story(2, STEPS))
    second = run_story(draw_story(2, STEPS))
    assert len(first.events) > 20
    assert "\n".join(first.events).encode() == "\n".join(second.events).encode()


def test_another_seed_tells_another_story() -> None:
    assert run_story(draw_story(2, STEPS)).events != run_story(draw_story(3, STEPS)).events


def _played(seed: int) -> Broken | None:
    """Play the seed's story: None, or the invariant broken (printed with its replay)."""
    print(f"till simulator seed {seed} (replay: python benchmarks/till_sim.py --seed {seed})")
    story = draw_story(seed, STEPS)
    outcome = run_story(story)
    assert outcome.sales == sum(1 for s in story.steps if s.kind == "sale")
    if outcome.broken is None:
        assert any(" step end:" in line for line in outcome.events), "the day never ended"
        return None
    print(printed(story, outcome, STEPS))
    return outcome.broken


@pytest.mark.parametrize("seed", BUDGET_SEEDS)
def test_a_seed_plays_to_the_end_of_the_day_with_no_invariant_broken(seed: int) -> None:
    broken = _played(seed)
    assert broken is None, f"seed {seed}: {broken}"


#: a fresh seed each run, under one test id: pytest-xdist's workers each collect the suite,
#: and a seed in the id made their collections differ (the whole run errored)
FRESH = int(time.time()) % 1_000_000


def test_a_fresh_seed_plays_to_the_end_of_the_day() -> None:
    broken = _played(FRESH)
    if broken is not None and broken.invariant in KNOWN_OPEN:
        pytest.xfail(f"seed {FRESH}, a known open break (docs/simulation.md): {broken}")
    assert broken is None, f"seed {FRESH}: {broken}"
