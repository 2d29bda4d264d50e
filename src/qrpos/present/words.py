"""What the layers below said (`qrpos.said.Said`), in the configured language.

An error raised with a `Said` (`QrposError.said`), a sale's last try as the outbox keeps
it, a reason the service's client gave: each has a key under ``said.`` in the catalogues
(`locales/*/said.toml`). A key no catalogue knows, or a plain string, is shown as the
English it carries: nothing said is lost. Imports no Textual.
"""

from __future__ import annotations

from qrpos.errors import QrposError
from qrpos.present.format import format_mnt
from qrpos.present.i18n import t_or
from qrpos.said import Said


def words(said: Said | str | None) -> str:
    """`said` in the current language ("" for None)."""
    if said is None:
        return ""
    if isinstance(said, str):
        return said
    fields = {name: _field(name, value) for name, value in said.fields.items()}
    return t_or(f"said.{said.key}", said.english, **fields)


def _field(name: str, value: str | int | float | Said) -> str | int | float:
    """A field as the sentence shows it: a nested `Said` in words, an amount in ₮, a
    number as itself (the plural form is chosen by it)."""
    if isinstance(value, Said):
        return words(value)
    if name == "state" and isinstance(value, str):
        return t_or(f"state.{value}", value)
    if name.startswith("amount") and isinstance(value, int) and not isinstance(value, bool):
        return format_mnt(value)
    return value


def error_words(exc: BaseException) -> str:
    """An error's message in the current language: its `Said` where it was raised with
    one, else its text as it is."""
    if isinstance(exc, QrposError) and exc.said is not None:
        return words(exc.said)
    return str(exc)
