"""The layering rules of docs/architecture.md, checked on the real import graph: no Textual outside
the UI, no import cycle anywhere, and one map of every exception class."""

from __future__ import annotations

import importlib
import inspect
import json
import pathlib
import pkgutil
import subprocess
import sys

import grimp

import qrpos
import qrpos.errors

CORE_PACKAGES = (
    "qrpos.spec",
    "qrpos.service",
    "qrpos.ledger",
    "qrpos.scanner",
    "qrpos.reports",
    "qrpos.simulator",
    "qrpos.config",
    "qrpos.credentials",
    "qrpos.notify",
    "qrpos.redact",
    "qrpos.errors",
    "qrpos.journal",
    "qrpos.manager_pin",
    "qrpos.doctor",
    # the words (shared by cli and tui) and the kiosk's wiring load without Textual too
    "qrpos.present",
    "qrpos.kiosk",
)


def _core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(qrpos.__path__, "qrpos."):
        if info.name.startswith(("qrpos.tui", "qrpos.cli")):
            continue
        if info.name.startswith(CORE_PACKAGES):
            names.append(info.name)
    return names


def test_core_imports_without_textual_or_picamera2() -> None:
    modules = _core_modules()
    assert "qrpos.service.client" in modules
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('textual', 'picamera2', 'libcamera'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert json.loads(out) == []


def test_cli_help_loads_no_textual() -> None:
    code = (
        "import sys\n"
        "from qrpos.cli import build_parser\n"
        "build_parser()\n"
        "print(any(m.split('.')[0] == 'textual' for m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "False"


def test_kiosk_command_parses_without_loading_other_commands_or_heavy_libraries() -> None:
    """`qrpos demo`/`qrpos run` draw their first screen before httpx, cv2 or keyring load."""
    code = (
        "import sys\n"
        "from qrpos.cli import build_parser, chosen_command\n"
        "argv = ['--log-level', 'info', 'demo', '--keep-state']\n"
        "build_parser(only=chosen_command(argv)).parse_args(argv)\n"
        "heavy = ('httpx', 'cv2', 'keyring', 'numpy', 'starlette', 'qrpos.scanner')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "[]"


def test_every_command_is_listed_in_the_full_help() -> None:
    from qrpos.cli import COMMANDS, build_parser

    text = build_parser().format_help()
    for name in COMMANDS:
        assert name in text


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_anywhere_in_qrpos() -> None:
    """Module by module, TYPE_CHECKING and function-level imports included (grimp, the
    engine of import-linter): a cycle is a design knot even when Python tolerates it."""
    graph = grimp.build_graph("qrpos")
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert "qrpos.tui.sale" in edges
    assert _cycles(edges) == []


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every public exception class defined in a module of qrpos, by dotted name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(qrpos.__path__, "qrpos."):
        if info.name.endswith(".__main__"):
            continue  # runs the CLI when imported
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == info.name
                and not name.startswith("_")
            ):
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_exception_class_is_on_the_map_in_qrpos_errors() -> None:
    doc = qrpos.errors.__doc__ or ""
    classes = _exception_classes()
    assert "qrpos.ledger.failures.IllegalTransition" in classes
    missing = [
        name
        for name, cls in classes.items()
        # named with its module, or (defined in errors.py or a subclass line) by name
        if name not in doc and f" {cls.__name__}" not in doc
    ]
    assert missing == [], f"add these to the tree in qrpos/errors.py: {missing}"
    for name in classes:
        if name.startswith("qrpos.errors."):
            assert f"◆ {name.rsplit('.', 1)[1]}" in doc, name


def test_every_class_named_on_the_map_exists_where_it_says() -> None:
    import re

    for dotted in re.findall(r"qrpos(?:\.\w+)+\.[A-Z]\w+", qrpos.errors.__doc__ or ""):
        module, _, name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, BaseException), dotted


def _ledger_floors() -> dict[str, int]:
    """Each ledger module's floor: 1 for a module importing no other ledger module, else one
    above the highest module it imports (the longest chain of imports beneath it)."""
    graph = grimp.build_graph("qrpos")
    modules = {m for m in graph.modules if m.startswith("qrpos.ledger.")}
    deps = {
        m: {d for d in graph.find_modules_directly_imported_by(m) if d in modules} - {m}
        for m in modules
    }
    floors: dict[str, int] = {}

    def floor(module: str) -> int:
        if module not in floors:
            floors[module] = 1 + max((floor(d) for d in deps[module]), default=0)
        return floors[module]

    for module in modules:
        floor(module)
    return floors


def test_the_ledgers_module_chains_are_at_most_six_deep() -> None:
    floors = _ledger_floors()
    assert floors["qrpos.ledger.states"] == 1  # the vocabulary imports nothing of the ledger
    assert floors["qrpos.ledger.desk"] >= 3  # the check sees real chains
    # the ledger's four floors (core, storage, drivers, desk: tests/ledger/test_ledger_floors.py)
    # hold chains inside core and storage too (states -> claims -> verdict_words; failures ->
    # typed_rows -> sales_sql); the longest is six since the drivers stopped importing each
    # other (issue 47: the refund queue and the review views moved to storage). It was seven
    deepest = max(floors.values())
    assert deepest <= 6, sorted(floors.items(), key=lambda kv: kv[1])


def test_sql_lives_in_the_ledgers_storage_modules_only() -> None:
    """No other module of the ledger runs a statement of its own (the import contract keeps
    sqlite3 out of them; this catches a connection handed in and used directly)."""
    import re

    ledger = pathlib.Path(qrpos.__file__).parent / "ledger"
    speaking = sorted(
        path.name
        for path in ledger.glob("*.py")
        if re.search(r"\.execute(many|script)?\(", path.read_text(encoding="utf-8"))
    )
    assert speaking == [
        "prints_sql.py",
        "refunds_sql.py",
        "reviews_sql.py",
        "sales_sql.py",
        "service_sql.py",
        "shifts_sql.py",
        "store.py",
    ]


def test_every_error_of_qrpos_has_the_one_root() -> None:
    """A caller catches `QrposError` for what qrpos raises on purpose; a bug is anything
    else. Private control-flow exceptions (``_Name``) are left out, as on the map."""
    classes = _exception_classes()
    assert len(classes) > 20  # the walk found them
    strays = [name for name, cls in classes.items() if not issubclass(cls, qrpos.errors.QrposError)]
    assert strays == []
