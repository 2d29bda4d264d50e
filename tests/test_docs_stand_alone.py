"""A clone of the repo stands alone: every relative link in the README and the docs
points at a file of the repo, every `#anchor` at a heading of its page, and nothing cites a
document that lives outside it (the service contract, the architecture and the hardware
notes are in `docs/` and at the top)."""

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
#: pages another branch of the same issue writes, linked here before they land: a link to
#: one may point at nothing until that branch is merged (then drop it from this set)
LANDING: set[str] = set()
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, its markup and punctuation dropped,
    spaces as hyphens."""
    text = re.sub(r"[`*]|<[^>]*>", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """Every anchor a page offers: its headings (a repeated one numbered as GitHub does) and
    any explicit `id`/`name`."""
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.MULTILINE):
        base = slug(heading)
        found.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    found.update(re.findall(r"""(?:id|name)=["']([^"']+)["']""", text))
    return found


def links(doc: Path) -> list[str]:
    """The link targets of a page, outside its code blocks."""
    return LINK.findall(FENCE.sub("", doc.read_text(encoding="utf-8")))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repo(doc: Path) -> None:
    broken = []
    for target in links(doc):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, a mail address, an anchor on the same page
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        inside = ROOT in (path, *path.parents)
        if not inside or not (path.exists() or str(path.relative_to(ROOT)) in LANDING):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_anchor_names_a_heading_of_its_page(doc: Path) -> None:
    broken = []
    for target in links(doc):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or "#" not in target:
            continue
        page, anchor = target.split("#", 1)
        path = (doc.parent / page).resolve() if page else doc
        if path.suffix == ".md" and path.exists() and anchor not in anchors(path):
            broken.append(target)
    assert broken == []


def test_anchors_are_the_ones_github_gives() -> None:
    assert slug("The cashier's screens") == "the-cashiers-screens"
    assert slug("Camera and decoder: `[scanner]`") == "camera-and-decoder-scanner"
    assert slug("Updates: releases side by side, a health gate") == (
        "updates-releases-side-by-side-a-health-gate"
    )
    assert slug("Ээлж ба кассчин") == "ээлж-ба-кассчин"
    assert slug("`vat_watch` polls") == "vat_watch-polls"


def test_no_file_of_the_repo_cites_a_document_outside_it() -> None:
    files = tracked("*.py", "*.md", "*.sh", "*.toml", "*.yml", "*.yaml", "*.service", "*.conf")
    citing = [
        str(f.relative_to(ROOT))
        for f in files
        if f != Path(__file__) and OUTSIDE.search(f.read_text(encoding="utf-8", errors="replace"))
    ]
    assert citing == []


def test_the_readmes_command_table_names_every_command_and_no_other() -> None:
    """The README's table of commands is the newcomer's list: a command added to the CLI
    (or dropped from it) without its row fails here, as `qrpos display` once went missing."""
    from qrpos.cli import COMMANDS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `qrpos ([a-z]+)", readme, re.MULTILINE))
    assert listed == set(COMMANDS), (
        f"missing rows: {sorted(set(COMMANDS) - listed)}, "
        f"rows of no command: {sorted(listed - set(COMMANDS))}"
    )
