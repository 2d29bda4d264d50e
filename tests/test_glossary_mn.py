"""The Mongolian catalogues held to docs/glossary-mn.md, read from the glossary itself.

Every `*.toml` under `locales/mn/` is read, so a catalogue file added later (a customer
display's, a new screen's) is held to the same words the day it lands, with no change here.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from qrpos.present import i18n

GLOSSARY = Path(__file__).resolve().parents[1] / "docs" / "glossary-mn.md"
CYRILLIC = "А-Яа-яЁёӨөҮү"

#: the concepts issue 43 asks the glossary to settle, by the name in its first column
CONCEPTS = (
    "sale", "transaction", "charge (verb), charged", "not charged", "refund, reversal",
    "approved", "declined", "needs review", "unsettled, unresolved", "abandon", "cancel",
    "shift", "cashier", "owner", "manager PIN", "end of day", "X report, Z report",
    "receipt (slip)", "VAT receipt", "VAT receipt number", "terminal", "till, kiosk",
    "pairing", "not paired", "online", "offline", "the wallet's QR code", "credentials",
    "outbox", "quick price", "printer", "paper out", "customer display",
)  # fmt: skip

#: names, commands, options, paths and code in a string: not words to translate
NOT_WORDS = re.compile(
    r"`[^`]*`|\{[^{}]*\}|Terminal Charge Service|(?:qrpos|outbox)(?: [a-z][a-z-]*)+"
    r"|--[a-z][a-z-]*|\S*/\S*|\[[a-z_]+\]|\b[A-Za-z]+_[A-Za-z_]+\b|\bPoint-of-sale\b"
)

#: a case ending (or any letters) written straight after a placeholder
GLUED = re.compile(rf"(\{{[^{{}}]*\}}|%\([a-z_]+\)[sr]|%[sr])-?[{CYRILLIC}]")

#: a case ending hyphened onto a Latin word, a command in backticks or a key letter
#: (`URL-ийг`, `JSON-оор`, `stdin-ээр`, `Z-ийн`, `qrpos reverse`-ийн): a noun carries it
LATIN_GLUED = re.compile(rf"[A-Za-z`]-[{CYRILLIC}]")

#: the Latin endings still to go, each named: the owner screens' key hint (not this read's
#: files; `C товчоор нэмнэ` is the fix)
LATIN_GLUED_LEFT: dict[str, set[str]] = {}


@dataclass(frozen=True)
class Row:
    """One concept of the glossary's table."""

    concept: str
    english: tuple[str, ...]
    mongolian: tuple[str, ...]
    retired: tuple[str, ...]


def glossary_rows(text: str) -> list[Row]:
    """The table under "## Words": backticked words of each column."""
    section = text.split("\n## Words\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("Concept", "---"):
            continue

        def words(cell: str) -> tuple[str, ...]:
            return tuple(re.findall(r"`([^`]+)`", cell))

        rows.append(Row(cells[0], words(cells[1]), words(cells[2]), words(cells[3])))
    return rows


def mn_catalogues(root: Path = i18n.LOCALES_DIR) -> dict[str, dict[str, str]]:
    """File name -> that file's keys and strings, for every mn catalogue file."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted((root / "mn").glob("*.toml")):
        table: dict[str, str] = {}
        i18n._flatten("", tomllib.loads(path.read_text("utf-8")), table, path)
        out[path.name] = table
    return out


def _cyr(word: str) -> bool:
    return bool(re.search(f"[{CYRILLIC}]", word))


def _word_start(word: str) -> re.Pattern[str]:
    """A Cyrillic word (lower case) at the start of a word; a Latin one whole, as written."""
    if _cyr(word):
        return re.compile(rf"(?<![{CYRILLIC}]){re.escape(word.lower())}")
    return re.compile(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])")


def retired_words_used(rows: list[Row], strings: dict[str, str]) -> list[str]:
    """`key: word (concept)` for every retired word an mn string uses."""
    found = []
    for row in rows:
        for word in row.retired:
            pattern = _word_start(word)
            for key, text in strings.items():
                if pattern.search(text.lower() if _cyr(word) else text):
                    found.append(f"{key}: {word!r} ({row.concept})")
    return found


def concepts_not_followed(rows: list[Row], en: dict[str, str], mn: dict[str, str]) -> list[str]:
    """`key: concept` wherever en names a held concept and mn uses none of its words."""
    missing = []
    for row in rows:
        if not row.english:
            continue
        english = re.compile(
            r"(?<![A-Za-z])(" + "|".join(re.escape(w) for w in row.english) + r")(?![A-Za-z])",
            re.IGNORECASE,
        )
        for key, text in en.items():
            if key not in mn or not english.search(NOT_WORDS.sub(" ", text)):
                continue
            said = NOT_WORDS.sub(" ", mn[key]).lower()
            if not any(word.lower() in said for word in row.mongolian):
                missing.append(f"{key}: {row.concept} -> {' / '.join(row.mongolian)}")
    return missing


def glued_endings(strings: dict[str, str]) -> list[str]:
    """`key: text` for every string with a case ending written onto a placeholder."""
    return [f"{key}: {text}" for key, text in strings.items() if GLUED.search(text)]


def latin_endings(strings: dict[str, str]) -> list[str]:
    """`key: text` for every string with a case ending hyphened onto a Latin word."""
    return [f"{key}: {text}" for key, text in strings.items() if LATIN_GLUED.search(text)]


# --- the glossary itself -----------------------------------------------------------------


def test_the_glossary_settles_every_concept_the_till_names() -> None:
    rows = glossary_rows(GLOSSARY.read_text("utf-8"))
    named = {row.concept for row in rows}
    assert not set(CONCEPTS) - named, sorted(set(CONCEPTS) - named)
    for row in rows:
        assert row.mongolian, f"{row.concept} has no Mongolian word"


def test_no_retired_word_is_also_a_word_the_glossary_asks_for() -> None:
    rows = glossary_rows(GLOSSARY.read_text("utf-8"))
    asked = [word for row in rows for word in row.mongolian]
    for row in rows:
        for word in row.retired:
            if _cyr(word):
                clash = [w for w in asked if _word_start(word).search(w.lower())]
                assert not clash, (row.concept, word, clash)


# --- every mn catalogue held to it -------------------------------------------------------


def test_no_mn_string_uses_a_word_the_glossary_retired() -> None:
    rows = glossary_rows(GLOSSARY.read_text("utf-8"))
    found = {name: retired_words_used(rows, strings) for name, strings in mn_catalogues().items()}
    assert {name: words for name, words in found.items() if words} == {}


def test_every_mn_catalogue_says_each_held_concept_with_the_glossary_word() -> None:
    rows = glossary_rows(GLOSSARY.read_text("utf-8"))
    en = i18n.load_catalogue("en")
    found = {
        name: concepts_not_followed(rows, en, strings) for name, strings in mn_catalogues().items()
    }
    assert {name: keys for name, keys in found.items() if keys} == {}


def test_no_case_ending_is_written_onto_a_placeholder() -> None:
    found = {name: glued_endings(strings) for name, strings in mn_catalogues().items()}
    assert {name: texts for name, texts in found.items() if texts} == {}


def test_no_case_ending_is_hyphened_onto_a_latin_word() -> None:
    found = {
        name: latin_endings(
            {k: v for k, v in strings.items() if k not in LATIN_GLUED_LEFT.get(name, set())}
        )
        for name, strings in mn_catalogues().items()
    }
    assert {name: texts for name, texts in found.items() if texts} == {}
    # each one left is still there (once fixed, it comes off the list)
    for name, keys in LATIN_GLUED_LEFT.items():
        assert latin_endings({k: mn_catalogues()[name][k] for k in keys}), (name, keys)


# --- the checks can fail -----------------------------------------------------------------


def test_a_retired_word_put_back_is_caught() -> None:
    rows = glossary_rows(GLOSSARY.read_text("utf-8"))
    strings = dict(i18n.load_catalogue("mn"))
    assert retired_words_used(rows, strings) == []
    strings["result.not_charged"] = "Төлбөр хийгдсэнгүй: үйлчлүүлэгчээс мөнгө суутгаагүй"
    strings["app.quit_title"] = "Киоскоос гарах уу?"
    strings["demo.keys"] = "o эзэн, PIN {pin}"
    strings["customer.paid"] = "Төлөгдлөө"
    strings["display.virtual"] = "Худалдан авагчийн дэлгэц"
    found = retired_words_used(rows, strings)
    assert any("customer.paid: 'төлөгдл'" in f for f in found), found
    assert any("display.virtual: 'худалдан авагч'" in f for f in found), found
    assert any("result.not_charged: 'суутга'" in f for f in found), found
    assert any("result.not_charged: 'төлбөр хий'" in f for f in found), found
    assert any("app.quit_title: 'киоск'" in f for f in found), found
    assert any("demo.keys: 'PIN'" in f for f in found), found
    # a Latin word is whole and case-sensitive: an option name is not the word PIN
    assert retired_words_used(rows, {"x": "--pin-stdin, PINs"}) == []


#: issue 49's second read: each misleading mn string as it was, and the retired word that catches it
MISLEADING_BEFORE = {
    "kiosk.amount.not_paired": ("Терминал холбогдоогүй байна", "терминал холбогдоогүй"),
    "owner.history.hint": (
        "↑↓ шилжих · R буцаах · F хайх · ←/→ өдөр · A бүх өдөр · F5 сэргээх · Esc буцах",
        "буцах",
    ),
    "kiosk.amount.token_already_paid": (
        "Энэ кодоор #{intent} борлуулалтын ({amount}) төлбөрийг аль хэдийн авсан: "
        "үйлчлүүлэгчээр QR кодыг шинэчлүүлнэ үү",
        "аль хэдийн авсан",
    ),
    "review.confirm_not_charged": (
        "#{sale} борлуулалтаас төлбөр АВААГҮЙ юу? Батлахын тулд менежерийн ПИН оруулна уу",
        "аваагүй юу",
    ),
    "owner.eod.date": ("{day} өдөр (орон нутгийн цаг, {from} – {to} UTC)", "орон нутгийн"),
    "status.display.missing": ("дэлгэцгүй", "дэлгэцгүй"),
    "status.display.both": ("төх. шалга", "төх."),
    "kiosk.pair.saved": ("{username} нэрээр холбогдлоо", "нэрээр холбогд"),
    "said.sale.other_terminal": (
        "{was} нэрээр илгээсэн, касс одоо {now} нэрээр холбогдсон; эзэн шийднэ",
        "нэрээр холбогд",
    ),
    "review.reason.other_terminal": (
        "өөр холболтоор илгээсэн: энэ терминал түүний түүхийг харахгүй",
        "өөр холболтоор",
    ),
    # the terminal's files (help, cli, said, doctor), second read
    "said.history.refused": ("үйлчилгээ татгалзсан: {message}", "үйлчилгээ татгалзсан"),
    "doctor.name.decoder": ("код уншигч", "код уншигч"),
    "doctor.fix.decoder": (
        "уншигчийг суулгах эсвэл [scanner] decoder тохируулна уу",
        "уншигчийг суулга",
    ),
    "help.decode.decoder": ("код уншигч (анхдагч: хамгийн хурдан нь)", "код уншигч"),
    "help.doctor.summary": (
        "камер, код уншигч, санах ой, цаг, нэвтрэх мэдээлэл ба үйлчилгээг шалгана",
        "код уншигч",
    ),
    "said.unclear.unexpected_status": ("хүлээгээгүй хариу HTTP {status}", "хүлээгээгүй хариу"),
    "said.refund.unexpected_status": (
        "хүлээгээгүй хариу HTTP {status}: дахин оролдоно",
        "хүлээгээгүй хариу",
    ),
    "abandon.body": (
        "Касс энэ төлбөрийг хүлээхээ болино. Түүхэд үйлчлүүлэгчээс төлбөр авсан нь харагдвал "
        "касс түүнийг автоматаар буцаана; тодорхойгүй бол эзэн шийднэ.",
        "автоматаар буцаа",
    ),
}


@pytest.mark.parametrize("key", sorted(MISLEADING_BEFORE))
def test_a_misleading_string_put_back_is_caught(key: str) -> None:
    rows = glossary_rows(GLOSSARY.read_text("utf-8"))
    old, word = MISLEADING_BEFORE[key]
    found = retired_words_used(rows, {key: old})
    assert any(f.startswith(f"{key}: {word!r}") for f in found), found


def test_a_concept_said_in_another_word_is_caught() -> None:
    rows = glossary_rows(GLOSSARY.read_text("utf-8"))
    en = {"a": "the outbox {path} is full", "b": "see qrpos outbox list", "c": "Owner"}
    mn = {"a": "гарах хайрцаг {path} дүүрсэн", "b": "qrpos outbox list-ийг үзнэ үү", "c": "Эзэн"}
    assert concepts_not_followed(rows, en, mn) == ["a: outbox -> илгээх дараал"]


@pytest.mark.parametrize(
    "text",
    ["{name}-ийн ПИН", "{day}-ний хаалт", "{time}-аас", "{path}г", "%(choices)s-с", "%s-ийг"],
)
def test_an_ending_on_a_placeholder_is_caught(text: str) -> None:
    assert glued_endings({"k": text}) == [f"k: {text}"]


@pytest.mark.parametrize(
    "text", ["кассчин {name}", "{day} өдрийн", "{time} цагаас", "#{intent} борлуулалт", "{a}-{b}"]
)
def test_a_noun_after_a_placeholder_is_not_an_ending(text: str) -> None:
    assert glued_endings({"k": text}) == []


@pytest.mark.parametrize(
    "text",
    ["үндсэн URL-ийг шалгана уу", "JSON-оор хэвлэнэ", "stdin-ээс уншина", "Z-ийн дугаар",
     "`qrpos reverse`-ийн адил", "Pi-д батарей алга", "N-р үүр"],
)  # fmt: skip
def test_an_ending_on_a_latin_word_is_caught(text: str) -> None:
    assert latin_endings({"k": text}) == [f"k: {text}"]


@pytest.mark.parametrize(
    "text",
    ["үйлчилгээний хаягийг (base_url)", "JSON хэлбэрээр", "stdin оролтоос", "ПИН-ийг",
     "НӨАТ-ын баримт", "0-ээс их", "URL биш", "Z тайлангийн дугаар"],
)  # fmt: skip
def test_a_noun_after_a_latin_word_is_not_an_ending(text: str) -> None:
    assert latin_endings({"k": text}) == []


# --- status words a cashier must tell apart ----------------------------------------------

#: the states a cashier must tell apart at a glance: each group's strings share no reading
APART = (
    ("status.online", "status.offline", "status.not_paired"),
    ("cli.charged.yes", "cli.charged.no", "cli.charged.unknown"),
    ("state.approved", "state.declined", "state.needs_review", "state.not_charged"),
    (
        "result.approved",
        "result.declined",
        "result.review_title",
        "result.not_charged_title",
        "result.abandoned_title",
    ),
    ("slip.z_outcome.sale", "slip.z_outcome.not_charged", "slip.z_outcome.reversed"),
    # the customer display: paid, not paid, and the cashier's to check (screen and pole)
    ("customer.paid", "customer.not_paid", "customer.check"),
    ("customer.pole.paid", "customer.pole.not_paid", "customer.pole.wait"),
)


def not_apart(strings: dict[str, str]) -> list[str]:
    """`a ~ b` for two states of a group whose words one could read as the other's: the
    same text, or all of one's words found in the other's (placeholders aside)."""
    found = []
    for group in APART:
        words = {
            key: set(re.sub(r"\{[^{}]*\}", " ", strings[key]).lower().split()) for key in group
        }
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                if words[a] <= words[b] or words[b] <= words[a]:
                    found.append(f"{a} ~ {b}")
    return found


def test_the_states_a_cashier_must_tell_apart_are_different_words_in_mn() -> None:
    assert not_apart(i18n.load_catalogue("mn")) == []


def test_offline_and_not_paired_in_one_word_is_caught() -> None:
    strings = dict(i18n.load_catalogue("mn"))
    strings["status.offline"], strings["status.not_paired"] = "холбоогүй {since}", "холбоогүй"
    assert not_apart(strings) == ["status.offline ~ status.not_paired"]
