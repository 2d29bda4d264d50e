"""No module of src/qrpos passes 450 lines (issue 49): a room that big hides its seams from
a new maintainer. A module that grows past it is split along a real seam (see
docs/architecture.md's source tree), not trimmed of its comments."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "qrpos"
#: the most lines a module of src/qrpos may have
MOST_LINES = 450


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_in_src_passes_450_lines() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100  # the walk sees the tree
    too_big = {str(p.relative_to(ROOT)): n for p in modules if (n := lines_of(p)) > MOST_LINES}
    assert too_big == {}, f"split these along a real seam: {too_big}"


def test_the_count_is_what_wc_counts(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("x = 1\n" * (MOST_LINES + 1), encoding="utf-8")
    assert lines_of(module) == MOST_LINES + 1 > MOST_LINES
