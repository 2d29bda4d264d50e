"""Words for a person before they are put in a language.

The layers below `present` (the service's client, the ledger, the errors they raise) know
*what* happened but must not choose a language: a sale's last try is stored in the outbox
and read later by a cashier in Mongolian or an owner in English. They say it as a `Said`:
a catalogue key, the fields it takes, and the English every log, `--json` output and
older reader keeps. `qrpos.present.words` puts a `Said` in the configured language; a key
no catalogue has falls back to the English, so nothing said is ever lost.

A field may itself be a `Said` (the reason inside "… after an unclear attempt"). Amounts
are ints named ``amount``, rendered as ₮ by the presenter. Imports nothing of qrpos.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, eq=True)
class Said:
    """One sentence for a person: `key` in the catalogues (under ``said.``), its fields,
    and the English (`str(said)`) for logs and machines."""

    key: str
    english: str
    fields: Mapping[str, str | int | float | Said] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.english

    @classmethod
    def plain(cls, text: str) -> Said:
        """Text that has no words in the catalogues: shown as it is, in every language."""
        return cls("", text)

    def __hash__(self) -> int:
        return hash((self.key, self.english))

    def to_json(self) -> str:
        """The stored form (a column of the outbox)."""
        return json.dumps(_plain(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> Said | None:
        """The stored form read back; None for nothing stored or anything unreadable (an
        older or damaged value: the caller shows the English column instead)."""
        if not text:
            return None
        try:
            return _said(json.loads(text))
        except (ValueError, TypeError, KeyError, RecursionError):
            return None


def say(key: str, english: str, **fields: str | int | float | Said) -> Said:
    """`Said(key, english.format(**fields), fields)`: the English template is written once,
    at the place that says it, with the placeholders the catalogues use."""
    return Said(key, english.format(**{k: str(v) for k, v in fields.items()}), dict(fields))


#: the operating system's reasons a person meets (a file, a disk, a device), by errno;
#: any other is told as the system's own words (`os.strerror`, English)
OS_REASONS = {
    errno.ENOENT: "enoent",
    errno.EACCES: "eacces",
    errno.EPERM: "eperm",
    errno.EISDIR: "eisdir",
    errno.ENOTDIR: "enotdir",
    errno.ENOSPC: "enospc",
    errno.EDQUOT: "enospc",
    errno.EROFS: "erofs",
    errno.EIO: "eio",
    errno.ELOOP: "eloop",
    errno.ENAMETOOLONG: "enametoolong",
    errno.EEXIST: "eexist",
    errno.EBUSY: "ebusy",
    errno.ENODEV: "enodev",
    errno.ENXIO: "enodev",
    errno.EADDRINUSE: "eaddrinuse",
    errno.EADDRNOTAVAIL: "eaddrnotavail",
    errno.ECONNREFUSED: "econnrefused",
}


def os_reason(exc: BaseException) -> Said:
    """Why an operating-system call failed, as words for a person: ``os.<name>`` for the
    reasons above, else the system's text (never the exception's class or repr)."""
    code = getattr(exc, "errno", None)
    english = getattr(exc, "strerror", None) or (os.strerror(code) if code else "") or str(exc)
    name = OS_REASONS.get(code) if isinstance(code, int) else None
    return Said(f"os.{name}", english) if name else Said.plain(english or type(exc).__name__)


def _plain(said: Said) -> dict[str, Any]:
    return {
        "key": said.key,
        "en": said.english,
        "fields": {k: _plain(v) if isinstance(v, Said) else v for k, v in said.fields.items()},
    }


def _said(data: Any) -> Said:
    if not isinstance(data, dict):
        raise TypeError("not a said object")
    key, english, raw = data["key"], data["en"], data.get("fields", {})
    if not isinstance(key, str) or not isinstance(english, str) or not isinstance(raw, dict):
        raise TypeError("not a said object")
    fields: dict[str, str | int | float | Said] = {}
    for name, value in raw.items():
        if isinstance(value, dict):
            fields[str(name)] = _said(value)
        elif isinstance(value, str | int | float) and not isinstance(value, bool):
            fields[str(name)] = value
        else:
            raise TypeError("a field of a said object is not text or a number")
    return Said(key, english, fields)
