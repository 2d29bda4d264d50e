"""Where the ledger's SQL may live, and how long a ledger module may grow.

SQL runs only in the storage modules (`STORAGE`): every other module of qrpos hands a
connection to them. The scan reads each module's syntax tree: a call of `execute`,
`executemany` or `executescript`, or a string (not a docstring) that reads as a statement,
outside them fails. Two other files hold databases of their own, not the outbox
(`OTHER_DATABASES`). A module over `MOST_LINES` lines is asking to be split (style.md).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import qrpos

SRC = Path(qrpos.__file__).parent
LEDGER = SRC / "ledger"

#: the ledger's storage modules: the only ones that run SQL on the outbox
STORAGE = frozenset(
    {
        "ledger/store.py",
        "ledger/migrations.py",
        "ledger/sales_sql.py",
        "ledger/refunds_sql.py",
        "ledger/reviews_sql.py",
        "ledger/service_sql.py",
        "ledger/prints_sql.py",
        "ledger/shifts_sql.py",
    }
)
#: SQLite files that are not the outbox: the history cache and the sandbox's own store
OTHER_DATABASES = frozenset({"reports/history_cache.py", "simulator/store.py"})

#: what a statement looks like inside a string (upper-case keywords, as the code writes them)
_STATEMENT = re.compile(
    r"\b(SELECT\b[\s\S]*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(UNIQUE\s+)?(TABLE|INDEX|TRIGGER|VIEW)|ALTER\s+TABLE|DROP\s+(TABLE|INDEX)"
    r"|PRAGMA\s+\w+|BEGIN(\s+IMMEDIATE)?\s*$|ROLLBACK|COMMIT\b\s*$)"
)
_RUNS = {"execute", "executemany", "executescript"}

#: the longest a ledger module may be
MOST_LINES = 450
#: modules still over `MOST_LINES`: none since issue 41 (lookup.py's windows went to
#: windows.py, states.py's clock reading to clockreading.py); none may join it
STILL_OVER: frozenset[str] = frozenset()


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings (prose, free to name a statement)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def sql_in(source: str) -> list[str]:
    """Each place in `source` that runs or spells a statement: `line: what`."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _RUNS
        ):
            found.append(f"{node.lineno}: .{node.func.attr}(")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in prose
            and _STATEMENT.search(node.value)
        ):
            found.append(f"{node.lineno}: {node.value.strip()[:60]!r}")
    return found


def _modules() -> dict[str, str]:
    return {
        path.relative_to(SRC).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(SRC.rglob("*.py"))
    }


def test_sql_runs_only_in_the_ledgers_storage_modules() -> None:
    speaking = {
        name: found
        for name, source in _modules().items()
        if name not in STORAGE | OTHER_DATABASES and (found := sql_in(source))
    }
    assert speaking == {}, f"move this SQL into a storage module ({sorted(STORAGE)}): {speaking}"


def test_every_storage_module_is_seen_speaking_sql() -> None:
    """The scan is not blind: it finds the statements the storage modules hold, and each
    listed module still exists (a stale list would excuse a module that is gone)."""
    modules = _modules()
    for name in STORAGE | OTHER_DATABASES:
        assert name in modules, name
        assert sql_in(modules[name]), name


def test_the_scan_finds_a_statement_run_or_spelled_outside_storage() -> None:
    run = 'def f(conn):\n    """SELECT * FROM prose is fine."""\n    conn.execute(QUERY)\n'
    assert sql_in(run) == ["3: .execute("]
    spelled = "QUERY = 'UPDATE charge_intent SET state = ? WHERE id = ?'\n"
    assert len(sql_in(spelled)) == 1
    assert sql_in("WORDS = 'select the sale, then update the screen'\n") == []
    assert sql_in('def g():\n    """UPDATE review SET decided = 1."""\n') == []


def test_no_ledger_module_is_over_the_limit() -> None:
    lengths = {
        path.name: len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(LEDGER.glob("*.py"))
    }
    over = {name for name, n in lengths.items() if n > MOST_LINES}
    assert over <= STILL_OVER, {name: lengths[name] for name in over - STILL_OVER}
    # the list only shrinks: a module that came under the limit leaves it
    came_under = sorted(STILL_OVER - over)
    assert came_under == [], f"under {MOST_LINES} lines now, strike from STILL_OVER: {came_under}"
