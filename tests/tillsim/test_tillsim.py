"""The till simulator (issue 47; docs/simulation.md): one seed replays one story byte for
byte, and a budget of fixed and fresh seeds plays to the end of the day, printing every
invariant broken with the command that replays it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from tillsim_engine import draw_story, printed, run_story

#: fixed seeds of the suite's budget (a few seconds of CPU in all)
FIXED_SEEDS = (1, 2, 3, 4, 5, 6, 7, 8)
STEPS = 30


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    """The simulated kiosk's logs off for the test, and the level given back after it: a
    level left at CRITICAL silenced every later test's kiosk.log on the same worker."""
    qrpos = logging.getLogger("qrpos")
    before = qrpos.level
    qrpos.setLevel(logging.CRITICAL)
    yield
    qrpos.setLevel(before)


def test_the_same_seed_replays_the_same_story_byte_for_byte() -> None:
    first = run_story(draw_story(2, STEPS))
    second = run_story(draw_story(2, STEPS))
    assert len(first.events) > 20
    assert "\n".join(first.events).encode() == "\n".join(second.events).encode()


def test_another_seed_tells_another_story() -> None:
    assert run_story(draw_story(2, STEPS)).events != run_story(draw_story(3, STEPS)).events


#: a fresh seed each run, under one test id: pytest-xdist's workers each collect the suite,
#: and a seed in the id made their collections differ (the whole run errored)
FRESH = pytest.param(int(time.time()) % 1_000_000, id="fresh")


@pytest.mark.parametrize("seed", [*FIXED_SEEDS, FRESH])
def test_a_seed_plays_to_the_end_of_the_day(seed: int) -> None:
    print(f"till simulator seed {seed} (replay: python benchmarks/till_sim.py --seed {seed})")
    story = draw_story(seed, STEPS)
    outcome = run_story(story)
    if outcome.broken is not None:
        # today's main carries the four defects of issue 47: print what broke and how to
        # replay it (the known-defect seeds are in docs/simulation.md)
        print(printed(story, outcome, STEPS))
    ended = any(" step end:" in line for line in outcome.events)
    assert ended or outcome.broken is not None
    assert outcome.sales == sum(1 for s in story.steps if s.kind == "sale")
