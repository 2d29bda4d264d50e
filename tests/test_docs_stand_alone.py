"""A clone of the repo stands alone: every relative link in the README and the docs
points at a file of the repo, and nothing cites a document that lives outside it (the
service contract, the architecture and the hardware notes are in `docs/` and at the top)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: what a file of the repo must not lean on: the workspace beside a checkout
OUTSIDE = re.compile(r"\.\./shared|shared/spec|shared/design\.md|shared/style\.md")


def tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [ROOT / line for line in out.splitlines() if line]


DOCS = tracked("*.md")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repo(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, a mail address, an anchor on the same page
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        if not path.exists() or ROOT not in (path, *path.parents):
            broken.append(target)
    assert broken == []


def test_no_file_of_the_repo_cites_a_document_outside_it() -> None:
    files = tracked("*.py", "*.md", "*.sh", "*.toml", "*.yml", "*.yaml", "*.service", "*.conf")
    citing = [
        str(f.relative_to(ROOT))
        for f in files
        if f != Path(__file__) and OUTSIDE.search(f.read_text(encoding="utf-8", errors="replace"))
    ]
    assert citing == []
