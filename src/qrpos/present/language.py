"""The language chosen on the kiosk, remembered across restarts in the state dir.

One small JSON file, replaced durably (write, fsync, rename, fsync of the directory:
`qrpos.statedir.write_private`), so a power cut leaves
either the old choice or the new one, never half a file. A missing or unreadable file
means "no choice made": the configured language applies.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from qrpos.present.i18n import languages
from qrpos.statedir import write_private

SETTINGS_FILE = "kiosk-settings.json"

log = logging.getLogger("qrpos.present")


def remembered_language(state_dir: Path) -> str | None:
    """The language last chosen on this kiosk, or None when none (or an unknown one) is."""
    try:
        data = json.loads((state_dir / SETTINGS_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("kiosk settings unreadable, using the configured language: %s", exc)
        return None
    lang = data.get("language") if isinstance(data, dict) else None
    return lang if isinstance(lang, str) and lang in languages() else None


def remember_language(state_dir: Path, lang: str) -> None:
    """Store `lang` as this kiosk's language (`write_private`: the bytes, the rename and
    the directory synced, so a power cut keeps the choice; raises OSError on failure)."""
    if lang not in languages():
        raise ValueError(f"no catalogue for language {lang!r}")
    write_private(state_dir, SETTINGS_FILE, json.dumps({"language": lang}).encode("utf-8"))
