"""The kiosk's catalogues: every language says everything, with the same placeholders."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from qrpos.errors import CatalogueError
from qrpos.present import i18n


def _catalogue_files() -> dict[str, dict[str, dict[str, str]]]:
    """lang -> file name -> keys of that file alone."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for lang in i18n.languages():
        for path in sorted((i18n.LOCALES_DIR / lang).glob("*.toml")):
            table: dict[str, str] = {}
            i18n._flatten("", tomllib.loads(path.read_text("utf-8")), table, path)
            out.setdefault(lang, {})[path.name] = table
    return out


def test_mongolian_and_english_catalogues_exist_and_mongolian_is_default() -> None:
    assert {"mn", "en"} <= set(i18n.languages())
    assert i18n.DEFAULT_LANGUAGE == "mn"


def test_every_catalogue_file_has_the_same_keys_in_every_language() -> None:
    files = _catalogue_files()
    names = {name for per_lang in files.values() for name in per_lang}
    for name in names:
        keys_by_lang = {lang: set(files[lang].get(name, {})) for lang in files}
        every = set().union(*keys_by_lang.values())
        for lang, keys in keys_by_lang.items():
            assert not every - keys, f"{lang}/{name} lacks {sorted(every - keys)}"


def test_every_message_uses_the_same_placeholders_in_every_language() -> None:
    merged = {lang: i18n.load_catalogue(lang) for lang in i18n.languages()}
    for key, text in merged["en"].items():
        for lang, catalogue in merged.items():
            assert i18n.placeholders(catalogue[key]) == i18n.placeholders(text), (lang, key)


def test_a_key_missing_in_one_language_is_caught(tmp_path: Path) -> None:
    (tmp_path / "en").mkdir()
    (tmp_path / "mn").mkdir()
    (tmp_path / "en" / "x.toml").write_text('[a]\nb = "B"\nc = "C"\n', "utf-8")
    (tmp_path / "mn" / "x.toml").write_text('[a]\nb = "Б"\n', "utf-8")
    en = i18n.load_catalogue("en", tmp_path)
    mn = i18n.load_catalogue("mn", tmp_path)
    assert set(en) - set(mn) == {"a.c"}


def test_a_key_defined_in_two_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "kiosk.toml").write_text('[a]\nb = "1"\n', "utf-8")
    (tmp_path / "en" / "owner.toml").write_text('[a]\nb = "2"\n', "utf-8")
    with pytest.raises(CatalogueError, match="defined twice"):
        i18n.load_catalogue("en", tmp_path)


def test_t_fills_placeholders_in_the_current_language() -> None:
    before = i18n.current_language()
    try:
        i18n.set_language("en")
        assert i18n.t("amount.too_large", max="1,000,000") == (
            "The amount may be at most 1,000,000 ₮"
        )
        i18n.set_language("mn")
        assert "1,000,000" in i18n.t("amount.too_large", max="1,000,000")
        assert i18n.t("amount.too_large", max="1") != "The amount may be at most 1 ₮"
    finally:
        i18n.set_language(before)


def test_unknown_language_is_refused() -> None:
    with pytest.raises(ValueError, match="no catalogue"):
        i18n.set_language("fr")


def test_words_named_by_data_fall_back_to_the_data_itself() -> None:
    """A state or reason code a newer version adds shows as itself, never as a key."""
    from qrpos.present.i18n import set_language, t_or

    set_language("en")
    assert t_or("state.approved", "approved") == "approved"
    assert t_or("state.needs_review", "needs_review") == "needs review"
    assert t_or("state.from_the_future", "from_the_future") == "from_the_future"
    set_language("mn")
    assert t_or("state.approved", "approved") == "зөвшөөрөгдсөн"
