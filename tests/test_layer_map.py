"""One map of the layers: docs/architecture.md's table is the import contract of pyproject.toml.

Three lists of the layers once disagreed (the architecture page, the README's source tree and
a comment over the contract), because nothing read them. Here the page's table of layers is
parsed and compared with the `layers` contract that `lint-imports` enforces, row by row and in
order, and with the packages and modules that exist under `src/qrpos/`; the page's source tree
must name each of them too. A layer added to the contract and not to the map, or the other way
round, or a package added to neither, fails here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PYPROJECT = ROOT / "pyproject.toml"
PACKAGE = ROOT / "src" / "qrpos"

Layers = list[frozenset[str]]


def contract_layers(pyproject_text: str) -> Layers:
    """The `layers` contract over the `qrpos` container, top to bottom, each a set of names."""
    config = tomllib.loads(pyproject_text)["tool"]["importlinter"]
    found = [
        c
        for c in config["contracts"]
        if c.get("type") == "layers" and c.get("containers") == ["qrpos"]
    ]
    assert len(found) == 1, "pyproject.toml must hold exactly one layers contract over qrpos"
    # "|" joins independent siblings, ":" siblings that may import each other
    return [
        frozenset(name.strip() for name in re.split(r"[|:]", layer)) for layer in found[0]["layers"]
    ]


def map_layers(markdown: str) -> Layers:
    """The table under the `<!-- layer map` marker: one row a layer, top to bottom, the
    layer's packages as `code` in its second cell."""
    after = markdown.split("<!-- layer map", 1)
    assert len(after) == 2, "docs/architecture.md has lost its layer map marker"
    layers: Layers = []
    numbers: list[int] = []
    for line in after[1].splitlines()[1:]:
        if not line.strip():
            if layers:
                break  # the blank line after the table ends it
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not cells[0].isdigit():
            continue  # the header and its rule
        numbers.append(int(cells[0]))
        layers.append(frozenset(re.findall(r"`([a-z_]+)`", cells[1])))
    assert numbers == list(range(1, len(numbers) + 1)), f"the map's rows are numbered {numbers}"
    return layers


def source_tree(markdown: str) -> str:
    """The fenced block under the `<!-- source tree` marker."""
    after = markdown.split("<!-- source tree", 1)
    assert len(after) == 2, "docs/architecture.md has lost its source tree marker"
    fence = re.search(r"```\n(.*?)```", after[1], re.DOTALL)
    assert fence is not None, "no fenced source tree after its marker"
    return fence.group(1)


def top_level_names(package: Path) -> dict[str, str]:
    """Every package (`name/`) and module (`name.py`) right under src/qrpos, by name."""
    names = {}
    for entry in package.iterdir():
        if entry.is_dir() and (entry / "__init__.py").exists():
            names[entry.name] = entry.name + "/"
        elif entry.suffix == ".py" and entry.stem not in ("__init__", "__main__"):
            names[entry.stem] = entry.name
    return names


def test_the_map_is_the_import_contract_row_by_row_in_order() -> None:
    in_contract = contract_layers(PYPROJECT.read_text(encoding="utf-8"))
    in_map = map_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    shown = [" | ".join(sorted(layer)) for layer in in_map]
    wanted = [" | ".join(sorted(layer)) for layer in in_contract]
    assert shown == wanted, (
        "docs/architecture.md's layer map differs from pyproject.toml's layers contract"
    )


def test_every_package_under_src_is_in_one_layer_of_the_map_and_the_contract() -> None:
    present = set(top_level_names(PACKAGE))
    assert {"ledger", "peripherals", "spec"} <= present  # the walk sees the tree
    for source, layers in (
        ("docs/architecture.md", map_layers(ARCHITECTURE.read_text(encoding="utf-8"))),
        ("pyproject.toml", contract_layers(PYPROJECT.read_text(encoding="utf-8"))),
    ):
        placed = [name for layer in layers for name in layer]
        assert len(placed) == len(set(placed)), f"{source} places a package twice"
        assert set(placed) == present, (
            f"{source}: missing {sorted(present - set(placed))}, "
            f"no such package {sorted(set(placed) - present)}"
        )


def test_the_source_tree_names_every_package_and_module() -> None:
    tree = source_tree(ARCHITECTURE.read_text(encoding="utf-8"))
    missing = [
        shown
        for shown in top_level_names(PACKAGE).values()
        if not re.search(r"(?<![\w.])" + re.escape(shown) + r"(?!\w)", tree)
    ]
    assert missing == [], "docs/architecture.md's source tree does not name these"


def test_the_parsers_see_a_layer_added_to_one_side_only() -> None:
    """The comparison is not vacuous: a layer more in the contract, or one fewer in the map,
    or two layers swapped, reads differently."""
    pyproject = PYPROJECT.read_text(encoding="utf-8")
    contract = contract_layers(pyproject)
    grown = pyproject.replace('    "said",\n]', '    "said",\n    "newlayer",\n]', 1)
    assert contract_layers(grown) == [*contract, frozenset({"newlayer"})]
    markdown = ARCHITECTURE.read_text(encoding="utf-8")
    row = re.search(r"^\| 12 \| `said` \|.*\n", markdown, re.MULTILINE)
    assert row is not None
    assert map_layers(markdown.replace(row.group(0), "", 1)) == contract[:-1]
    swapped = markdown.replace("| 1 | `cli` |", "| 1 | `kiosk` |", 1).replace(
        "| 2 | `kiosk` |", "| 2 | `cli` |", 1
    )
    assert map_layers(swapped)[:2] == [frozenset({"kiosk"}), frozenset({"cli"})]
