"""The ledger's floors, read from the syntax trees (issue 47): at most four, core → storage →
drivers → desk, and no driver imports another.

The floors are declared once, in the import-linter contract of pyproject.toml ("The ledger's
floors"); `lint-imports` holds them through grimp's graph. This test reads the same
declaration and checks it against each module's own imports (every `import` and `from …
import` of its syntax tree, inside functions and `TYPE_CHECKING` blocks too): every module
placed once, every import going down or sideways inside a floor whose siblings may import
each other (`:`), never across the drivers' floor (`|`), and the longest chain of imports
climbing no more than four floors.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import qrpos.ledger

LEDGER = Path(qrpos.ledger.__file__).parent
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
#: the most floors the ledger may have (issue 47): core, storage, drivers, desk
MOST_FLOORS = 4

Graph = Mapping[str, frozenset[str]]


@dataclass(frozen=True)
class Floor:
    """One floor of the contract, its modules, and whether they may import each other."""

    modules: frozenset[str]
    independent: bool


def declared_floors() -> list[Floor]:
    """The ledger's floors as pyproject.toml declares them, bottom first."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    [contract] = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["type"] == "layers" and c.get("containers") == ["qrpos.ledger"]
    ]
    assert contract.get("exhaustive") is True, "a new ledger module must be placed"
    floors = []
    for layer in reversed(contract["layers"]):
        independent = "|" in layer
        names = layer.split("|") if independent else layer.split(":")
        floors.append(Floor(frozenset(n.strip() for n in names), independent))
    return floors


def _ledger_name(dotted: str, modules: frozenset[str]) -> str | None:
    parts = dotted.split(".")
    if parts[:2] == ["qrpos", "ledger"] and len(parts) > 2 and parts[2] in modules:
        return parts[2]
    return None


def ledger_imports(source: str, modules: frozenset[str]) -> frozenset[str]:
    """The ledger modules one module's source imports (by the syntax tree)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {m for a in node.names if (m := _ledger_name(a.name, modules))}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.level:
                raise AssertionError("the ledger imports absolutely (a relative import)")
            if (m := _ledger_name(node.module, modules)) is not None:
                found.add(m)
            elif node.module == "qrpos.ledger":  # `from qrpos.ledger import refunds_sql`
                found |= {a.name for a in node.names if a.name in modules}
    return frozenset(found)


def ledger_graph() -> dict[str, frozenset[str]]:
    """Each ledger module (but the package's lazy `__init__`) and the ledger modules it imports."""
    paths = {p.stem: p for p in LEDGER.glob("*.py") if p.stem != "__init__"}
    modules = frozenset(paths)
    return {
        name: ledger_imports(path.read_text(encoding="utf-8"), modules) - {name}
        for name, path in paths.items()
    }


def floor_problems(graph: Graph, floors: list[Floor]) -> list[str]:
    """What breaks the floors: a module placed nowhere or twice, an import going up, one
    between two modules of an independent floor, more than `MOST_FLOORS` floors."""
    problems = []
    where: dict[str, int] = {}
    for level, floor in enumerate(floors):
        for module in floor.modules:
            if module in where:
                problems.append(f"{module} is placed on two floors")
            where[module] = level
    problems += [f"{m} is on no floor" for m in sorted(set(graph) - set(where))]
    problems += [f"{m} is placed but is no module" for m in sorted(set(where) - set(graph))]
    if len(floors) > MOST_FLOORS:
        problems.append(f"{len(floors)} floors declared, at most {MOST_FLOORS}")
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            if module not in where or other not in where:
                continue
            if where[other] > where[module]:
                problems.append(f"{module} imports {other}, a floor above it")
            elif where[other] == where[module] and floors[where[module]].independent:
                problems.append(f"{module} imports {other}: two drivers, neither may")
    return problems


def floors_climbed(graph: Graph, floors: list[Floor]) -> dict[str, int]:
    """How many floors the longest chain of imports under each module climbs (1: it reaches
    no lower floor), counting only the imports that go down a floor."""
    where = {m: level for level, floor in enumerate(floors) for m in floor.modules}
    climbed: dict[str, int] = {}

    def climb(module: str, path: tuple[str, ...]) -> int:
        if module in path:
            raise AssertionError(f"an import cycle: {' -> '.join((*path, module))}")
        if module not in climbed:
            below = [
                climb(d, (*path, module)) + (where.get(d, 0) < where.get(module, 0))
                for d in graph[module]
            ]
            climbed[module] = max(below, default=1)
        return climbed[module]

    for module in graph:
        climb(module, ())
    return climbed


def test_the_ledger_stands_on_four_floors_and_no_driver_imports_another() -> None:
    graph, floors = ledger_graph(), declared_floors()
    assert floor_problems(graph, floors) == []
    climbed = floors_climbed(graph, floors)
    assert max(climbed.values()) <= MOST_FLOORS, sorted(climbed.items(), key=lambda kv: kv[1])
    # the check sees real chains: the desk stands on drivers, on storage, on the core
    assert climbed["desk"] == MOST_FLOORS
    assert floors[0].modules >= {"states", "events", "moves", "claims"}  # the core
    assert floors[-1].modules == {"desk"}
    drivers = floors[-2]
    assert drivers.independent and {"lookup", "resolver", "reversals", "reviews"} <= drivers.modules


def test_the_drivers_import_each_other_nowhere_by_the_syntax_tree_alone() -> None:
    """The same rule with no help from the declaration's other floors: a driver's imports
    name no other driver."""
    graph, drivers = ledger_graph(), declared_floors()[-2].modules
    crossing = {d: sorted(graph[d] & drivers) for d in sorted(drivers) if graph[d] & drivers}
    assert crossing == {}


# --- the check itself fails where it must -------------------------------------------------

_FLOORS = [
    Floor(frozenset({"states", "moves"}), independent=False),
    Floor(frozenset({"store", "refund_queue"}), independent=False),
    Floor(frozenset({"lookup", "reversals"}), independent=True),
    Floor(frozenset({"desk"}), independent=False),
]
_GOOD: dict[str, frozenset[str]] = {
    "states": frozenset(),
    "moves": frozenset({"states"}),
    "store": frozenset(),
    "refund_queue": frozenset({"store", "moves"}),
    "lookup": frozenset({"refund_queue"}),
    "reversals": frozenset({"refund_queue", "states"}),
    "desk": frozenset({"lookup", "reversals"}),
}


def test_the_check_passes_a_layered_graph_and_counts_its_floors() -> None:
    assert floor_problems(_GOOD, _FLOORS) == []
    assert floors_climbed(_GOOD, _FLOORS)["desk"] == 4
    assert floors_climbed(_GOOD, _FLOORS)["moves"] == 1  # a sibling of the core: no climb


def test_the_check_finds_a_driver_importing_another() -> None:
    graph = {**_GOOD, "lookup": frozenset({"reversals"})}  # the lookup → reversals
    assert floor_problems(graph, _FLOORS) == ["lookup imports reversals: two drivers, neither may"]


def test_the_check_finds_an_import_going_up_and_a_module_on_no_floor() -> None:
    graph = {**_GOOD, "moves": frozenset({"store"}), "listing": frozenset()}
    assert floor_problems(graph, _FLOORS) == [
        "listing is on no floor",
        "moves imports store, a floor above it",
    ]


def test_the_check_finds_a_fifth_floor() -> None:
    floors = [*_FLOORS, Floor(frozenset({"cli"}), independent=False)]
    graph = {**_GOOD, "cli": frozenset({"desk"})}
    assert floor_problems(graph, floors) == ["5 floors declared, at most 4"]
    assert floors_climbed(graph, floors)["cli"] == 5


def test_the_syntax_tree_reading_sees_every_form_of_import() -> None:
    modules = frozenset({"reviews", "refunds_sql", "store", "clock"})
    source = (
        "import qrpos.ledger.store\n"
        "from qrpos.ledger import refunds_sql, said\n"
        "def f() -> None:\n"
        "    from qrpos.ledger.reviews import decide\n"
        "from qrpos.service import TerminalClient\n"
    )
    assert ledger_imports(source, modules) == {"store", "refunds_sql", "reviews"}
