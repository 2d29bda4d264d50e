"""The kiosk's words in Mongolian (default) and English.

Every catalogue is a TOML file `locales/<lang>/<team>.toml`; nested tables flatten to
dotted keys (``[sale] approved = "…"`` is ``sale.approved``). All files of a language
are merged; a key defined twice is an error, so two teams cannot silently collide.
Imports no Textual. `CatalogueError` is defined in `qrpos.errors` (the exception map).
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from qrpos.errors import CatalogueError

LOCALES_DIR = Path(__file__).with_name("locales")
DEFAULT_LANGUAGE = "mn"
FALLBACK_LANGUAGE = "en"

#: the language in use (one kiosk, one language at a time)
_current = {"lang": DEFAULT_LANGUAGE}


def _flatten(prefix: str, table: Mapping[str, Any], out: dict[str, str], where: Path) -> None:
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _flatten(f"{name}.", value, out, where)
        elif isinstance(value, str):
            if name in out:
                raise CatalogueError(f"{where}: key {name!r} is defined twice")
            out[name] = value
        else:
            raise CatalogueError(f"{where}: {name!r} should be text, not {type(value).__name__}")


def languages(root: Path = LOCALES_DIR) -> tuple[str, ...]:
    """Languages that have a catalogue directory."""
    return tuple(sorted(p.name for p in root.iterdir() if p.is_dir()))


def load_catalogue(lang: str, root: Path = LOCALES_DIR) -> dict[str, str]:
    """Every key of `lang`, merged from all of its TOML files."""
    out: dict[str, str] = {}
    for path in sorted((root / lang).glob("*.toml")):
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise CatalogueError(f"{path}: {exc}") from None
        _flatten("", table, out, path)
    return out


@cache
def _catalogue(lang: str) -> dict[str, str]:
    return load_catalogue(lang)


def placeholders(text: str) -> set[str]:
    """The ``{name}`` fields a message uses."""
    return {field for _, field, _, _ in string.Formatter().parse(text) if field}


def set_language(lang: str) -> None:
    """Switch every later `t()` call to `lang` (``mn`` or ``en``)."""
    if lang not in languages():
        raise ValueError(f"no catalogue for language {lang!r}")
    _current["lang"] = lang


def current_language() -> str:
    """The language `t()` uses now."""
    return _current["lang"]


def plural_form(lang: str, n: int) -> str:
    """The CLDR plural category of `n` in `lang`: English and Mongolian both have "one"
    (exactly 1) and "other"; a Mongolian noun after a number does not change, so its
    catalogue gives the same words for both."""
    return "one" if n == 1 else "other"


def _lookup(lang: str, key: str, params: Mapping[str, Any]) -> str | None:
    """The text of `key`, or of its plural form (``key.one`` / ``key.other``) chosen by
    the ``count`` field (else the first whole number among the fields)."""
    catalogue = _catalogue(lang)
    text = catalogue.get(key)
    if text is not None or f"{key}.other" not in catalogue:
        return text
    numbers = [params["count"]] if "count" in params else list(params.values())
    n = next((v for v in numbers if isinstance(v, int) and not isinstance(v, bool)), None)
    form = plural_form(lang, n) if n is not None else "other"
    return catalogue.get(f"{key}.{form}", catalogue[f"{key}.other"])


def t(key: str, **params: Any) -> str:
    """The text of `key` in the current language, with ``{name}`` fields filled in.

    A key missing in the current language falls back to English, then to the key itself
    (a test over all catalogues keeps that from happening in a release).
    """
    text = _lookup(current_language(), key, params)
    if text is None:
        text = _lookup(FALLBACK_LANGUAGE, key, params) or key
    if not params:
        return text
    try:
        return text.format_map(params)
    except (KeyError, IndexError, ValueError):
        return text


def t_or(key: str, fallback: str, **params: Any) -> str:
    """`t(key)` when a catalogue has the key, else `fallback` as it is: for words named
    by data (a state, a reason code, a check's name) that a newer version may add before
    its catalogue knows them."""
    text = t(key, **params)
    return fallback if text == key else text
