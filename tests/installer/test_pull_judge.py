"""The plug-pull benchmark's verdict on a sale (benchmarks/pull_judge.py, used by
benchmarks/image_pulls.py): books and ledger must agree, never twice, never unknown."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("pull_judge", ROOT / "benchmarks" / "pull_judge.py")
assert _spec and _spec.loader
_module = importlib.util.module_from_spec(_spec)
sys.modules["pull_judge"] = _module  # its dataclass looks itself up there
_spec.loader.exec_module(_module)
judge: Callable[[int, int, Sequence[tuple[str, int | None]]], Any] = _module.judge


@pytest.mark.parametrize(
    ("charges", "refunds", "intents", "outcome"),
    [
        (1, 0, [("approved", 1)], "charged"),
        (1, 0, [("charged_per_history", 1)], "charged"),
        (0, 0, [("not_charged", 0)], "not charged"),
        (0, 0, [("declined", 0)], "not charged"),
        (0, 0, [], "not stored"),
        (1, 1, [("reversed_after_abandon", 1)], "charged, refunded"),
        (1, 0, [("needs_review", None)], "in review, the books charged"),
        (0, 0, [("needs_review", None)], "in review, the books not charged"),
    ],
)
def test_a_resolved_sale_passes(
    charges: int, refunds: int, intents: list[tuple[str, int | None]], outcome: str
) -> None:
    verdict = judge(charges, refunds, intents)
    assert (verdict.outcome, verdict.ok, verdict.double) == (outcome, True, False)


@pytest.mark.parametrize(
    ("charges", "refunds", "intents", "words"),
    [
        (2, 0, [("approved", 1)], "charged 2 times"),
        (1, 0, [("not_charged", 0)], "the ledger says not charged"),
        (1, 0, [("declined", 0)], "the ledger says not charged"),
        (0, 0, [("approved", 1)], "the books did not"),
        (1, 0, [], "no sale in the ledger"),
        (0, 0, [("pending", None)], "unresolved"),
        (1, 0, [("unresolved", None)], "unresolved"),
        (2, 0, [("needs_review", None)], "charged 2 times"),
        (0, 0, [("credentials_rejected", None)], "unresolved"),
        (0, 0, [("not_charged", 0), ("approved", 1)], "2 sales"),
        (1, 1, [("approved", 1)], "the books refunded"),
    ],
)
def test_a_sale_the_two_sides_disagree_on_fails(
    charges: int, refunds: int, intents: list[tuple[str, int | None]], words: str
) -> None:
    verdict = judge(charges, refunds, intents)
    assert not verdict.ok
    assert words in verdict.outcome
    assert verdict.double == (charges > 1)
