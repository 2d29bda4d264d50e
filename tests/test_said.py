"""Words said below the screens (`qrpos.said`) reach a person in the configured language.

- Every `say(key, english, ...)` in the source has its key in every catalogue, with the
  placeholders its English template uses: a new sentence cannot ship in English only,
  and a catalogue cannot drift from the fields the code gives.
- A `Said` survives the outbox (JSON) whole, nested ones included; anything else stored
  there reads back as None, and the English column is shown instead.
- An error raised with a `Said` is told in the language; `str(exc)` stays English (logs).
"""

from __future__ import annotations

import ast
import errno
import importlib
import inspect
import os
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qrpos.errors import QrposError
from qrpos.ledger.views import TokenAlreadyPaid
from qrpos.present.i18n import languages, load_catalogue, set_language
from qrpos.present.words import error_words, words
from qrpos.said import OS_REASONS, Said, os_reason, say

SRC = Path(__file__).resolve().parents[1] / "src" / "qrpos"


def _template(node: ast.expr) -> str | None:
    """The English template when the source writes it as constants (joined with +)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        if left is not None and right is not None:
            return left + right
        # a computed part (a plural ending, a reason code in front): keep what is constant
        return (left or "") + (right or "") if (left or right) else None
    if isinstance(node, ast.Name):
        return ""  # a module constant (a reason code) in front of the sentence
    return None


def said_in_source() -> list[tuple[str, str, set[str], set[str]]]:
    """(where, key, placeholders of the English, field names given) for every say()."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports_say = any(
            isinstance(node, ast.ImportFrom)
            and node.module == "qrpos.said"
            and any(alias.name == "say" for alias in node.names)
            for node in ast.walk(tree)
        )
        if not imports_say and path.name != "said.py":
            continue  # a `say` of its own (a command's printer)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "say"):
                continue
            key = node.args[0]
            assert isinstance(key, ast.Constant) and isinstance(key.value, str), path
            english = _template(node.args[1])
            assert english is not None, (path, key.value)
            names = {f for _, f, _, _ in string.Formatter().parse(english) if f}
            given = {k.arg for k in node.keywords if k.arg}
            where = f"{path.relative_to(SRC)}:{node.lineno}"
            found.append((where, key.value, names, given))
    return found


SAID = said_in_source()


def placeholders(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_the_source_says_things_at_all() -> None:
    keys = {key for _, key, _, _ in SAID}
    # the client's reasons, the ledger's last words, the errors: each kind is there
    assert {"unclear.cannot_connect", "sale.absent", "error.outbox_full"} <= keys
    assert len(keys) > 60


@pytest.mark.parametrize("where,key,english,fields", SAID, ids=[s[0] for s in SAID])
def test_every_sentence_said_has_words_in_every_language(
    where: str, key: str, english: set[str], fields: set[str]
) -> None:
    assert english <= fields, f"{where}: the English uses fields it is not given"
    for lang in languages():
        catalogue = load_catalogue(lang)
        forms = [catalogue.get(f"said.{key}")] + [
            catalogue.get(f"said.{key}.{form}") for form in ("one", "other")
        ]
        texts = [text for text in forms if text is not None]
        assert texts, f"{where}: said.{key} is missing in {lang}"
        for text in texts:
            assert placeholders(text) <= fields, f"{where}: {lang} uses fields not given"


def test_every_said_key_in_the_catalogues_is_said_somewhere() -> None:
    keys = {f"said.{key}" for _, key, _, _ in SAID} | {f"said.os.{n}" for n in OS_REASONS.values()}
    catalogue = load_catalogue("en")
    stored = {k.removesuffix(".one").removesuffix(".other") for k in catalogue}
    unused = {k for k in stored if k.startswith("said.")} - keys
    assert unused == set()


fields = st.recursive(
    st.text(max_size=20) | st.integers(-(10**9), 10**9) | st.floats(allow_nan=False),
    lambda inner: st.builds(
        Said,
        st.text(max_size=10),
        st.text(max_size=30),
        st.dictionaries(st.text(max_size=8), inner, max_size=3),
    ),
    max_leaves=6,
)


@given(
    key=st.text(max_size=20),
    english=st.text(max_size=60),
    given_fields=st.dictionaries(st.text(max_size=8), fields, max_size=4),
)
def test_a_said_survives_the_outbox_whole(
    key: str, english: str, given_fields: dict[str, str | int | float | Said]
) -> None:
    said = Said(key, english, given_fields)
    assert Said.from_json(said.to_json()) == said


@given(st.one_of(st.none(), st.text(max_size=80)))
def test_anything_else_stored_reads_back_as_nothing(stored: str | None) -> None:
    read = Said.from_json(stored)
    assert read is None or isinstance(read, Said)
    if read is not None:  # whatever reads back is words that can be told
        assert isinstance(words(read), str)


def test_a_nested_reason_and_an_amount_are_told_in_the_language() -> None:
    why = say("unclear.no_answer_within", "no answer within {seconds} s", seconds="10")
    said = say(
        "sale.answered_after_unclear",
        "{why} after an unclear attempt: checking the history",
        why=why,
    )
    assert str(said) == "no answer within 10 s after an unclear attempt: checking the history"
    set_language("mn")
    assert words(said) == (
        "тодорхойгүй оролдлогын дараа 10 секундэд хариу ирсэнгүй: түүхийг шалгаж байна"
    )
    exc = TokenAlreadyPaid(7, 4500, "tx_abc")
    assert "4,500 ₮" in error_words(exc) and "MNT" not in error_words(exc)
    assert "4500 MNT" in str(exc)  # the log keeps the English, as it was
    set_language("en")
    assert "4,500 ₮" in error_words(exc) and error_words(exc).startswith("this code already")


def test_a_key_no_catalogue_has_falls_back_to_its_english() -> None:
    set_language("mn")
    assert words(Said("no.such.key", "as it was said")) == "as it was said"
    assert error_words(QrposError("a plain message")) == "a plain message"


def test_the_cashier_reads_an_open_sales_last_try_in_the_language() -> None:
    from qrpos.ledger import IntentState, SaleResult
    from qrpos.present.outcome import outcome_view

    why = say("unclear.cannot_connect", "cannot connect")
    sale = SaleResult(
        intent_id=3,
        state=IntentState.UNRESOLVED,
        amount_mnt=4500,
        transaction=None,
        decline_code=None,
        message=str(why),
        charged=None,
        message_said=why,
    )
    set_language("mn")
    assert "холбогдож чадсангүй" in outcome_view(sale).detail
    set_language("en")
    assert "cannot connect" in outcome_view(sale).detail


def test_a_damaged_or_hostile_stored_word_reads_back_as_nothing() -> None:
    deep = '{"key": "k", "en": "e", "fields": {"f": ' * 5000 + "1" + "}}" * 5000
    assert Said.from_json(deep) is None
    assert Said.from_json('{"key": 1, "en": "e"}') is None
    assert Said.from_json('{"key": "k", "en": "e", "fields": {"f": true}}') is None
    assert Said.from_json("[1, 2]") is None


@pytest.mark.parametrize("code", sorted(OS_REASONS), ids=errno.errorcode.get)
def test_the_systems_reasons_have_words_in_every_language(code: int) -> None:
    exc = OSError(code, os.strerror(code), "/var/lib/qrpos/x")
    said = os_reason(exc)
    assert said.english == os.strerror(code)
    for lang in languages():
        set_language(lang)
        told = words(said)
        assert told and told != said.key, (lang, told)
    set_language("en")


def test_a_reason_the_catalogues_do_not_know_is_the_systems_own_text() -> None:
    said = os_reason(OSError(errno.ETXTBSY, os.strerror(errno.ETXTBSY)))
    set_language("mn")
    try:
        assert words(said) == os.strerror(errno.ETXTBSY)
        assert words(os_reason(OSError("no errno at all"))) == "no errno at all"
    finally:
        set_language("en")


#: modules whose errors are not for a person in the kiosk's language: the sandbox speaks
#: the service's English (its bodies are the contract's), a catalogue error is the
#: developer's, and a damaged or misused ledger row is a detail inside a sentence that is
#: said (`error.outbox_damaged` names the file and says what to do); a reply that breaks
#: the contract is told by the sale's last try (`said.reply.*`), not by its own text
TECHNICAL = (
    "simulator/",
    "present/i18n.py",
    "ledger/typed_rows.py",
    "ledger/prints_sql.py",
    "ledger/sales_sql.py",
    "ledger/refunds_sql.py",
    "ledger/reviews_sql.py",
    "ledger/service_sql.py",
    "ledger/shifts_sql.py",
    "ledger/views.py",
)
TECHNICAL_CALLS = {
    "ledger/review_reads.py": {"DamagedRow"},  # a damaged row: the damage trap words it
    "ledger/store.py": {"LedgerError"},  # "closed": a bug's message, never a person's
    # a cell the table refuses, asked for by a driver: a bug's message (as IllegalTransition)
    "ledger/moves.py": {"IllegalMove"},
    "service/status.py": {"MalformedResponse"},  # the contract's words, kept in the row
}


def _qrpos_errors() -> set[str]:
    """The names of every QrposError subclass the source defines or re-exports."""
    names = set()
    for path in sorted(SRC.rglob("*.py")):
        if "simulator" in path.parts or path.name == "__main__.py":
            continue
        module = ".".join(("qrpos", *path.relative_to(SRC).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        for name, obj in vars(importlib.import_module(module)).items():
            if inspect.isclass(obj) and issubclass(obj, QrposError):
                names.add(name)
    return names


def test_no_error_for_a_person_is_raised_in_english_only() -> None:
    """The class of "English on a Mongolian kiosk": an error of ours raised with a bare
    string or f-string reaches `qrpos: …` or a screen untranslated. Each must be raised
    with a `say(...)` (or a `t(...)` already in the language)."""
    ours = _qrpos_errors()
    english_only = []
    for path in sorted(SRC.rglob("*.py")):
        where = str(path.relative_to(SRC))
        if where.startswith(TECHNICAL):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            name = ast.unparse(node.exc.func).rsplit(".", 1)[-1]
            if name not in ours or name in TECHNICAL_CALLS.get(where, set()):
                continue
            first = node.exc.args[0] if node.exc.args else None
            if isinstance(first, ast.JoinedStr) or (
                isinstance(first, ast.Constant) and isinstance(first.value, str)
            ):
                english_only.append(f"{where}:{node.lineno} {name}")
    assert english_only == []


def test_no_command_fails_with_english_only_words() -> None:
    """`fail("…")` prints to the installer as it is: a literal there is English only."""
    literal = []
    for path in sorted((SRC / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "fail":
                first = node.args[0] if node.args else None
                if isinstance(first, ast.JoinedStr | ast.Constant):
                    literal.append(f"{path.name}:{node.lineno}")
    assert literal == []
