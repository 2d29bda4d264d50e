"""Which tests cover which module: the table of docs/test-map.md, from the tests' imports.

A small change to qrpos touches several modules, and the question before running the suite is
"which tests exercise what I changed". This reads every test file's imports (and those of the
test helpers it imports by name, one level down) with `ast`, and lists for each module of
`src/qrpos/` the test files that import it. It is a floor, not a measure of coverage: a test
that drives the kiosk through Pilot, a command through a subprocess or the sandbox over HTTP
exercises far more than it imports.

    .venv/bin/python benchmarks/coverage_map.py           # rewrite docs/test-map.md
    .venv/bin/python benchmarks/coverage_map.py --check   # exit 1 when the page is stale
"""

from __future__ import annotations

import argparse
import ast
import itertools
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TESTS = ROOT / "tests"
PAGE = ROOT / "docs" / "test-map.md"
#: a module imported by this many test files or more is shown by directory only
LIST_AT_MOST = 8
#: functions the tests run a command through: `qrpos(env, "charge", ...)`, `main(["charge"])`
COMMAND_RUNNERS = {"qrpos", "main", "run_cli", "cli"}


def package_exports() -> dict[str, str]:
    """`package.Name` -> the module that defines it, for every name a package's `__init__`
    re-exports (`from .sources import CameraSource`) or loads on first use (its `_WHERE`,
    `qrpos.lazy`): `from qrpos.ledger import ChargeDesk` counts as `qrpos.ledger.desk`."""
    where = {}
    for init in (SRC / "qrpos").rglob("__init__.py"):
        package = ".".join(init.parent.relative_to(SRC).parts)
        for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = package + "." + node.module if node.level else node.module
                for alias in node.names:
                    where[f"{package}.{alias.asname or alias.name}"] = module
            elif (
                isinstance(node, ast.Assign)
                and any(isinstance(n, ast.Name) and n.id == "_WHERE" for n in node.targets)
                and isinstance(node.value, ast.Dict)
            ):
                for key, value in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                        where[f"{package}.{key.value!s}"] = package + str(value.value)
    return where


def command_modules() -> dict[str, str]:
    """A command's name -> its module (`print` -> `qrpos.cli.printer`), from `COMMANDS`."""
    init = SRC / "qrpos" / "cli" / "__init__.py"
    for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(n, ast.Name) and n.id == "COMMANDS" for n in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            return {
                str(k.value): "qrpos.cli." + str(v.value)
                for k, v in zip(node.value.keys, node.value.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
            }
    raise SystemExit("qrpos.cli has no COMMANDS table")


def runner(node: ast.AST) -> bool:
    """A call of one of the functions the tests run commands through (`_qrpos` too)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name.lstrip("_") in COMMAND_RUNNERS


def commands_run(tree: ast.AST) -> set[str]:
    """The modules of the commands a test runs: in a file that runs commands (a runner
    called, or `qrpos.cli` named), the first command name given to a runner
    (`qrpos(env, "outbox", ...)`), and any list or tuple that starts with one (a table of
    runs) or names one right after `qrpos`/`qrpos.cli`."""
    modules = command_modules()
    nodes = list(ast.walk(tree))
    if not any(
        runner(n) or (isinstance(n, ast.Constant) and n.value == "qrpos.cli") for n in nodes
    ):
        return set()
    found = set()
    for node in nodes:
        words: list[ast.expr] = []
        if isinstance(node, ast.Call) and runner(node):
            args = [e for a in node.args for e in (a.elts if isinstance(a, ast.List) else [a])]
            constants: list[ast.expr] = [a for a in args if isinstance(a, ast.Constant)]
            words = constants[:1]
        elif isinstance(node, ast.List | ast.Tuple) and node.elts:
            elts = node.elts
            words = [elts[0]] + [
                after
                for before, after in itertools.pairwise(elts)
                if isinstance(before, ast.Constant) and before.value in ("qrpos", "qrpos.cli")
            ]
        for word in words:
            if isinstance(word, ast.Constant) and word.value in modules:
                found.add(modules[word.value])
    return found


def source_modules() -> list[str]:
    """Every module of qrpos, dotted (a package as its `__init__`'s name)."""
    names = []
    for path in sorted((SRC / "qrpos").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def imported(path: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """The qrpos modules a file imports (a lazily exported name counted as the module that
    defines it) or runs as a command, and the bare names it imports (local helpers)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = commands_run(tree)
    bare: set[str] = set()
    where = package_exports()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("qrpos"):
                    found.add(alias.name)
                else:
                    bare.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("qrpos"):
                found.add(node.module)
                # `from qrpos.ledger import claims` imports a module, not only a name
                for alias in node.names:
                    dotted = f"{node.module}.{alias.name}"
                    found.add(where.get(dotted, dotted))
            else:
                bare.add(node.module.split(".")[0])
    return {name for name in found if name in known}, bare


def helpers_of(test: Path) -> list[Path]:
    """Where a test's bare imports may live: its own directory, then tests/."""
    return [test.parent, TESTS]


def coverage() -> dict[str, list[str]]:
    """Module -> the test files (relative to the repo) that import it."""
    known = set(source_modules())
    covered: dict[str, set[str]] = defaultdict(set)
    for test in sorted(TESTS.rglob("test_*.py")):
        modules, bare = imported(test, known)
        for name in bare:
            for folder in helpers_of(test):
                helper = folder / f"{name}.py"
                if helper.exists() and not helper.name.startswith("test_"):
                    modules |= imported(helper, known)[0]
                    break
        for module in modules:
            covered[module].add(test.relative_to(ROOT).as_posix())
    return {module: sorted(covered.get(module, ())) for module in sorted(known)}


def cell(tests: list[str]) -> str:
    """The test files, or their directories with counts when there are many."""
    if not tests:
        return "no test imports it: covered through the modules that use it"
    if len(tests) <= LIST_AT_MOST:
        return " ".join(f"`{t}`" for t in tests)
    folders: dict[str, int] = defaultdict(int)
    for test in tests:
        folders[test.rsplit("/", 1)[0] + "/"] += 1
    return ", ".join(f"`{folder}` {count}" for folder, count in sorted(folders.items()))


def page() -> str:
    """docs/test-map.md's text."""
    lines = [
        "# Which tests cover which module",
        "",
        "<!-- generated by benchmarks/coverage_map.py: edit that, not this page -->",
        "",
        "For each module of `src/qrpos/`, the test files that import it (directly, or through",
        "a test helper they import by name). Generated: `.venv/bin/python",
        "benchmarks/coverage_map.py` rewrites this page, `--check` says whether it is stale.",
        "It is a floor: a test that drives the kiosk through Pilot, a command in a subprocess",
        "or the sandbox over HTTP covers far more than it imports. The fast loop by area is in",
        "[CONTRIBUTING.md](../CONTRIBUTING.md#the-fast-loop-changed-this-run-these).",
        "",
        f"More than {LIST_AT_MOST} files are shown as directories with their counts.",
        "",
        "| module | tests | test files |",
        "|---|---:|---|",
    ]
    for module, tests in coverage().items():
        lines.append(f"| `{module}` | {len(tests)} | {cell(tests)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write docs/test-map.md, or with --check say whether it is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        current = PAGE.exists() and PAGE.read_text(encoding="utf-8") == text
        print("docs/test-map.md is " + ("current" if current else "stale: run without --check"))
        return 0 if current else 1
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}: {text.count(chr(10)) - 15} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
