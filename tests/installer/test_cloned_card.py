"""Issue 48: a state dir copied to another card is refused before its outbox opens.

The machine-id is read through `qrpos.identity`'s own path argument (a seam we own): each
"card" here is a machine-id file in tmp_path, the state dir a real directory with a real
outbox.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from qrpos.config import Config
from qrpos.identity import (
    IDENTITY_FILE,
    ClonedStateDir,
    check_machine,
    machine_digest,
    read_machine_id,
)
from qrpos.ledger import Ledger
from qrpos.present.i18n import set_language
from qrpos.present.words import error_words

CARD_A = "0123456789abcdef0123456789abcdef"
CARD_B = "fedcba9876543210fedcba9876543210"


def _card(tmp_path: Path, name: str, machine_id: str) -> Path:
    path = tmp_path / f"{name}-machine-id"
    path.write_text(machine_id + "\n", encoding="ascii")
    return path


@pytest.mark.parametrize("text", ["", "uninitialized\n", "not-hex" * 5])
def test_an_image_without_a_machine_id_is_not_checked(tmp_path: Path, text: str) -> None:
    path = tmp_path / "machine-id"
    path.write_text(text, encoding="ascii")
    state = tmp_path / "state"
    assert read_machine_id(path) is None
    assert check_machine(state, path) is None
    assert not (state / IDENTITY_FILE).exists()


def test_first_open_records_the_machine_and_a_till_id_then_agrees(tmp_path: Path) -> None:
    a = _card(tmp_path, "a", CARD_A)
    state = tmp_path / "state"
    first = check_machine(state, a)
    assert first is not None and len(first.till_id) == 8
    assert first.machine == machine_digest(CARD_A)
    assert check_machine(state, a) == first  # the same till on every start
    stored = (state / IDENTITY_FILE).read_text(encoding="utf-8")
    assert CARD_A not in stored  # only a digest of the machine-id is kept
    assert (state / IDENTITY_FILE).stat().st_mode & 0o077 == 0


def test_two_cards_flashed_from_one_image_get_two_identities(tmp_path: Path) -> None:
    a = check_machine(tmp_path / "a-state", _card(tmp_path, "a", CARD_A))
    b = check_machine(tmp_path / "b-state", _card(tmp_path, "b", CARD_B))
    assert a is not None and b is not None
    assert a.machine != b.machine and a.till_id != b.till_id


def test_a_state_dir_copied_to_another_card_is_refused_in_both_languages(
    tmp_path: Path,
) -> None:
    state_a = tmp_path / "state-a"
    check_machine(state_a, _card(tmp_path, "a", CARD_A))
    Ledger.open(state_a / "outbox.sqlite3").close()
    state_b = tmp_path / "state-b"
    shutil.copytree(state_a, state_b)  # the card cloned after pairing
    with pytest.raises(ClonedStateDir) as caught:
        check_machine(state_b, _card(tmp_path, "b", CARD_B))
    english = str(caught.value)
    assert "another machine" in english and "will not charge" in english
    assert "pair this machine as a new terminal" in english
    assert CARD_A not in english and CARD_B not in english  # ids never shown whole
    assert machine_digest(CARD_A)[:8] in english
    try:
        set_language("mn")
        mongolian = error_words(caught.value)
    finally:
        set_language("en")
    assert "төлбөр авахгүй" in mongolian and "шинэ терминалаар холбоно" in mongolian


def test_a_damaged_identity_file_is_refused_not_replaced(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / IDENTITY_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(ClonedStateDir):
        check_machine(state, _card(tmp_path, "a", CARD_A))
    assert (state / IDENTITY_FILE).read_text(encoding="utf-8") == "{not json"


def test_the_kiosk_refuses_before_it_opens_the_outbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qrpos.kiosk import production

    state = tmp_path / "state"
    check_machine(state, _card(tmp_path, "a", CARD_A))
    monkeypatch.setattr("qrpos.identity.MACHINE_ID_PATH", _card(tmp_path, "b", CARD_B))
    config = Config(state_dir=state, base_url="http://127.0.0.1:9")
    with pytest.raises(ClonedStateDir), production.production_services(config):
        pass
    assert not config.ledger_path.exists()
