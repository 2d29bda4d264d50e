"""The owner's quick prices as stored in the state dir: what is set is what is read back,
across any sequence of sets and clears; bad input is refused with a reason and changes
nothing; a damaged file is reported, never half read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrpos import spec
from qrpos.quick_prices import (
    PRICES_FILE,
    SLOTS,
    QuickPrice,
    QuickPriceBook,
    QuickPriceError,
    clear_price,
    key_of,
    load_prices,
    set_price,
    slot_of_key,
)

slots = st.integers(1, SLOTS)
amounts = st.integers(spec.AMOUNT_MIN_MNT, spec.AMOUNT_MAX_MNT)
labels = st.text(st.characters(categories=["L", "N", "Zs"]), max_size=16)
moves = st.lists(
    st.one_of(
        st.tuples(st.just("set"), slots, amounts, labels),
        st.tuples(st.just("clear"), slots, st.just(0), st.just("")),
    ),
    max_size=12,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moves=moves)
def test_what_is_set_is_what_is_read_back(
    tmp_path_factory: pytest.TempPathFactory, moves: list[tuple[str, int, int, str]]
) -> None:
    state_dir = tmp_path_factory.mktemp("prices")
    model: dict[int, tuple[int, str]] = {}
    book = QuickPriceBook(state_dir)
    for kind, slot, amount, label in moves:
        if kind == "set":
            stored = set_price(state_dir, slot, amount, label)
            model[slot] = (amount, " ".join(label.split()))
            assert stored == QuickPrice(slot, amount, model[slot][1])
        else:
            assert clear_price(state_dir, slot) == (model.pop(slot, None) is not None)
        read = {s: (p.amount, p.label) for s, p in load_prices(state_dir).items()}
        assert read == model
        assert {s: (p.amount, p.label) for s, p in book.prices().items()} == model


def test_keys_and_slots_map_one_to_one() -> None:
    assert [key_of(s) for s in range(1, SLOTS + 1)] == [f"F{n}" for n in range(3, 12)]
    for slot in range(1, SLOTS + 1):
        assert slot_of_key(key_of(slot).lower()) == slot
    for key in ("f1", "f2", "f12", "f13", "f", "fx", "3", "F3", "ctrl+f3"):
        assert slot_of_key(key) is None


@pytest.mark.parametrize(
    ("slot", "amount", "label"),
    [
        (0, 100, ""),
        (SLOTS + 1, 100, ""),
        (1, 0, ""),
        (1, spec.AMOUNT_MAX_MNT + 1, ""),
        (1, 100, "x" * 17),
        (1, 100, "bell\x07"),
    ],
)
def test_a_bad_price_is_refused_and_changes_nothing(
    tmp_path: Path, slot: int, amount: int, label: str
) -> None:
    set_price(tmp_path, 2, 4500, "Lunch")
    before = (tmp_path / PRICES_FILE).read_bytes()
    with pytest.raises(QuickPriceError):
        set_price(tmp_path, slot, amount, label)
    assert (tmp_path / PRICES_FILE).read_bytes() == before


@pytest.mark.parametrize(
    "body",
    [
        "{",
        "[]",
        '{"prices": {}}',
        '{"prices": [{"slot": 1}]}',
        '{"prices": [{"slot": "1", "amount": 100}]}',
        '{"prices": [{"slot": 1, "amount": 100.5}]}',
        '{"prices": [{"slot": 1, "amount": true}]}',
        '{"prices": [{"slot": 1, "amount": 100}, {"slot": 1, "amount": 200}]}',
        '{"prices": [{"slot": 1, "amount": 0}]}',
        '{"prices": [{"slot": 10, "amount": 100}]}',
    ],
)
def test_a_damaged_file_is_reported_and_the_kiosk_charges_none_of_it(
    tmp_path: Path, body: str
) -> None:
    (tmp_path / PRICES_FILE).write_text(body, encoding="utf-8")
    with pytest.raises(QuickPriceError, match="quick prices"):
        load_prices(tmp_path)
    book = QuickPriceBook(tmp_path)
    assert book.prices() == {}
    assert book.problem is not None


def test_a_running_kiosk_sees_a_change_made_by_the_command(tmp_path: Path) -> None:
    """The book re-reads the file when it changed (`qrpos prices set` from a shell)."""
    book = QuickPriceBook(tmp_path)
    assert book.prices() == {}
    set_price(tmp_path, 1, 4500, "Lunch")
    assert book.prices() == {1: QuickPrice(1, 4500, "Lunch")}
    (tmp_path / PRICES_FILE).unlink()
    assert book.prices() == {}


def _qrpos(state_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QRPOS_STATE_DIR": str(state_dir), "COLUMNS": "80"}
    env["QRPOS_LANGUAGE"] = "en"
    return subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "--state-dir", str(state_dir), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


def test_the_command_sets_lists_and_clears(tmp_path: Path) -> None:
    done = _qrpos(tmp_path, "prices", "set", "1", "4500", "Set menu A")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "F3 now charges 4,500 ₮ Set menu A"
    assert _qrpos(tmp_path, "prices", "set", "9", "1000000").returncode == 0
    listed = _qrpos(tmp_path, "prices")
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == [
        "  F3      4,500 ₮  Set menu A",
        " F11  1,000,000 ₮",
    ]
    assert all(len(line) <= 80 for line in listed.stdout.splitlines())
    assert _qrpos(tmp_path, "prices", "clear", "1").stdout.strip() == "F3 is empty now"
    assert _qrpos(tmp_path, "prices", "clear", "1").stdout.strip() == "F3 was empty"
    assert load_prices(tmp_path) == {9: QuickPrice(9, 1_000_000, "")}


@pytest.mark.parametrize(
    "args",
    [
        ("prices", "set", "0", "100"),
        ("prices", "set", "10", "100"),
        ("prices", "set", "1", "0"),
        ("prices", "set", "1", "45.00"),
        ("prices", "set", "1", "1000001"),
        ("prices", "clear", "x"),
    ],
)
def test_the_command_refuses_a_bad_slot_or_amount_as_usage(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = _qrpos(tmp_path, *args)
    assert done.returncode == 64
    assert "Traceback" not in done.stderr
    assert not (tmp_path / PRICES_FILE).exists()


def test_the_command_refuses_a_long_label_and_a_damaged_file_with_exit_1(tmp_path: Path) -> None:
    done = _qrpos(tmp_path, "prices", "set", "1", "100", "a label far too long for it")
    assert done.returncode == 1
    assert "at most 16" in done.stderr
    (tmp_path / PRICES_FILE).write_text(json.dumps({"prices": 3}), encoding="utf-8")
    listed = _qrpos(tmp_path, "prices")
    assert listed.returncode == 1
    assert "damaged" in listed.stderr and "Traceback" not in listed.stderr


def test_an_unreadable_prices_file_is_named_with_its_reason_in_words(tmp_path: Path) -> None:
    (tmp_path / PRICES_FILE).mkdir()  # something in the way that is not a file
    done = _qrpos(tmp_path, "prices")
    assert done.returncode == 1
    assert "cannot be read: it is a directory" in done.stderr, done.stderr
    assert "Errno" not in done.stderr and "Traceback" not in done.stderr
