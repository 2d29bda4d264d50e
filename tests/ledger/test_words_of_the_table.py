"""Every review reason, sale state and refund state the ledger stores has its words in both
catalogues: a missing one would show a person the raw code (`present.owner.review_reason`
falls back to it, and so does the outbox's list)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

import qrpos
from qrpos.ledger.events import ReviewReason
from qrpos.ledger.moves import REVIEW_REASONS_IN_TABLE
from qrpos.ledger.states import IntentState, ReversalState

LOCALES = Path(qrpos.__file__).parent / "present" / "locales"


def _flat(table: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, name + "."))
        else:
            out[name] = str(value)
    return out


def catalogue(language: str) -> dict[str, str]:
    """Every key of one language's catalogues, dotted."""
    words: dict[str, str] = {}
    for path in sorted((LOCALES / language).glob("*.toml")):
        words.update(_flat(tomllib.loads(path.read_text(encoding="utf-8"))))
    return words


@pytest.mark.parametrize("language", ["mn", "en"])
def test_every_review_reason_has_its_words(language: str) -> None:
    words = catalogue(language)
    missing = [r.value for r in ReviewReason if f"review.reason.{r.value}" not in words]
    assert missing == [], f"{language}: review.reason.* lacks {missing}"
    # and every reason is one the table opens (no word for a reason that cannot happen)
    shown = {k.removeprefix("review.reason.") for k in words if k.startswith("review.reason.")}
    assert shown == {str(r) for r in REVIEW_REASONS_IN_TABLE}


@pytest.mark.parametrize("language", ["mn", "en"])
def test_every_stored_state_has_its_words(language: str) -> None:
    words = catalogue(language)
    states = {s.value for s in IntentState} | {s.value for s in ReversalState}
    missing = sorted(s for s in states if f"state.{s}" not in words)
    assert missing == [], f"{language}: state.* lacks {missing}"


def test_the_two_catalogues_say_different_words_for_the_new_reason() -> None:
    """The Mongolian words are Mongolian, not the English copied over."""
    en, mn = catalogue("en"), catalogue("mn")
    key = f"review.reason.{ReviewReason.REFUND_REFUSED}"
    assert en[key] != mn[key]
    assert "refund" in en[key]
