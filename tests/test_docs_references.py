"""A test file named in the code's docstrings and comments or in the docs exists (issue 49:
a docstring cited a test file that was never there, and a new maintainer looked for it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: a path to a test module, as the docs and comments write one
CITED = re.compile(r"(?<![\w/.])tests/[A-Za-z0-9_/]+\.py\b")


def cited_test_files(text: str) -> set[str]:
    return set(CITED.findall(text))


def test_every_test_file_cited_in_src_and_the_docs_exists() -> None:
    sources = [*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("docs").rglob("*.md")]
    # the catalogues' comments cite tests too (owner.toml named a test that never existed)
    sources += [*ROOT.joinpath("src").rglob("*.toml")]
    sources += [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    cited = {
        (str(path.relative_to(ROOT)), name)
        for path in sources
        for name in cited_test_files(path.read_text(encoding="utf-8"))
    }
    assert len(cited) > 50  # the search sees the citations
    missing = sorted((where, name) for where, name in cited if not (ROOT / name).is_file())
    assert missing == [], f"cited but not there: {missing}"


def test_a_citation_is_found_where_a_sentence_makes_it() -> None:
    said = "checked by `tests/ledger/test_moves.py`, and tests/x/y.py. Not foo/tests/z.py."
    assert cited_test_files(said) == {"tests/ledger/test_moves.py", "tests/x/y.py"}
