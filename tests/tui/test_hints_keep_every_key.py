"""Every key a screen's hint names in English, it names in Mongolian too: words may be
abbreviated to fit 80 columns, a key is never dropped.

Checked twice: on every hint in the catalogues, and on the 80×24 snapshots themselves
(the kiosk's and the owner's), so a hint composed in code or cut by the screen shows too.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from qrpos.present import i18n

TESTS = Path(__file__).resolve().parents[1]
SNAPSHOT_DIRS = (TESTS / "tui" / "__snapshots__", TESTS / "tui_owner" / "__snapshots__")

#: a key as hints write it: a named key, an F key, a letter, a digit range, arrows, a symbol
KEY = re.compile(
    r"(?<!\S)(Ctrl\+[A-Z]|Esc|Enter/\+|Enter|Tab|-/Backspace|Backspace|Delete|PgDn|PgUp"
    r"|F\d{1,2}|[A-Z]|\d–\d|↑↓|←/→|/|\*|\.)(?=[\s:,]|$)"
)
#: the demo's keys are lower-case letters too (an English hint's "a" is a word)
DEMO_KEY = re.compile(r"(?<!\S)([a-z])(?= )")
#: a line that is a hint: keys separated by " · ", or one key and what it does after ":"
HINT_LINE = re.compile(r" · |^(Esc|Enter|Tab)\b[^:]{0,14}:")


def keys(hint: str, *, demo: bool = False) -> set[str]:
    """The keys a hint names (`demo`: the demo's lower-case letter keys too)."""
    return set(KEY.findall(hint)) | (set(DEMO_KEY.findall(hint)) if demo else set())


def test_the_key_reader_sees_keys_and_not_words() -> None:
    en = "↑↓ · R reverse · P copy · F find · ←/→ day · A all · F5 refresh · Esc back"
    assert keys(en) == {"↑↓", "R", "P", "F", "←/→", "A", "F5", "Esc"}
    dropped = "R буцаах · P хуулбар · F хайх · ←/→ өдөр · A бүгд · F5 шинэчлэх · Esc гарах"
    assert keys(en) - keys(dropped) == {"↑↓"}
    assert keys("p phone · h phone stays · L lang", demo=True) == {"p", "h", "L"}
    assert keys("1–9 start a cashier's shift · Esc back") == {"1–9", "Esc"}
    assert keys("Enter/+ pay · -/Backspace delete · / clear · * 00 · . 000") == {
        "Enter/+", "-/Backspace", "/", "*", ".",
    }  # fmt: skip


def _hints(catalogue: dict[str, str]) -> dict[str, str]:
    return {
        key: text
        for key, text in catalogue.items()
        if key.rsplit(".", 1)[-1].startswith("hint") or key == "demo.keys"
    }


def test_every_hint_in_the_catalogues_names_the_same_keys_in_mn_and_en() -> None:
    en, mn = i18n.load_catalogue("en"), i18n.load_catalogue("mn")
    hints = _hints(en)
    assert len(hints) > 15  # the screens' hints were found
    demo = {key: key == "demo.keys" for key in hints}
    differ = {
        key: (keys(en[key], demo=demo[key]), keys(mn[key], demo=demo[key]))
        for key in hints
        if keys(en[key], demo=demo[key]) != keys(mn[key], demo=demo[key])
    }
    assert differ == {}


def svg_lines(svg: str) -> list[str]:
    """The text of each screen line of a Textual SVG snapshot, in order."""
    lines: dict[int, list[tuple[float, str]]] = {}
    for m in re.finditer(
        r'<text[^>]*x="([\d.]+)"[^>]*clip-path="url\(#terminal-line-(\d+)\)">([^<]*)</text>', svg
    ):
        x, line, text = float(m.group(1)), int(m.group(2)), html.unescape(m.group(3))
        lines.setdefault(line, []).append((x, text.replace("\u00a0", " ")))
    return ["".join(t for _, t in sorted(parts)) for _, parts in sorted(lines.items())]


def hint_keys(svg: str) -> set[str]:
    """The keys named on the hint lines of a snapshot (the status bar is not a hint)."""
    return {k for line in svg_lines(svg) if HINT_LINE.search(line.strip()) for k in keys(line)}


def _pairs() -> list[tuple[Path, Path]]:
    pairs = []
    for folder in SNAPSHOT_DIRS:
        for en in sorted(folder.rglob("*-en].svg")):
            mn = en.with_name(en.name.replace("-en].svg", "-mn].svg"))
            if mn.exists():
                pairs.append((en, mn))
    return pairs


def test_snapshots_come_in_pairs() -> None:
    assert len(_pairs()) >= 25


@pytest.mark.parametrize(("en", "mn"), _pairs(), ids=lambda p: p.name.split("[")[-1][:-8])
def test_each_80x24_snapshot_shows_in_mn_every_key_it_shows_in_en(en: Path, mn: Path) -> None:
    shown_en, shown_mn = hint_keys(en.read_text("utf-8")), hint_keys(mn.read_text("utf-8"))
    assert shown_en <= shown_mn, f"mn drops {sorted(shown_en - shown_mn)}"


@pytest.mark.parametrize("language", ["mn", "en"])
def test_every_hint_fits_one_line_of_an_80_column_screen(language: str) -> None:
    """A hint is one line under `#hint`'s padding (78 cells), also the ones no snapshot
    shows (the history's with a printer set up)."""
    hints = _hints(i18n.load_catalogue(language))
    shown = {key: re.sub(r"\{[a-z_]+\}", "0000", text) for key, text in hints.items()}  # PIN
    wide = {key: cell_len(text) for key, text in shown.items() if cell_len(text) > 78}
    assert wide == {}
