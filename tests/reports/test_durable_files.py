"""Every file the kiosk writes, and how a power cut leaves it.

A Pi's plug is pulled; the files that matter afterwards must hold the last thing the
kiosk said they hold. The manager's and each cashier's PIN pause, the language chosen on
screen, the pairing, the quick prices and the PIN itself go through
`qrpos.statedir.write_private` (bytes synced, renamed over the name, the directory
synced); a CSV a person takes away through `write_durable` or `CsvExport` (the same
three steps beside the target). The outbox and the history cache are SQLite
(`synchronous=FULL`, WAL). The rest may lose their last seconds, each for its reason
below (`WRITERS`).

`tests/reports/power_cut.py` plays the cut: a rename whose directory was not synced is
undone, a file whose bytes were not synced is left empty. Before this test the PIN pause
was renamed without either sync, so a cut left a guesser with fresh attempts.
"""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from power_cut import PowerCut

from qrpos import manager_pin
from qrpos.present.language import remember_language, remembered_language
from qrpos.reports.csv_export import CsvExport
from qrpos.reports.pin_gate import FREE_ATTEMPTS, PinGate, Reading
from qrpos.statedir import write_durable

SRC = Path(__file__).resolve().parents[2] / "src" / "qrpos"


def _clock() -> Reading:
    return Reading("boot-1", 500.0, 1_700_000_000.0)


@pytest.mark.parametrize("whose", ["manager", "cashier"])
def test_the_pin_pause_survives_a_power_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whose: str
) -> None:
    cut = PowerCut(tmp_path, monkeypatch)
    if whose == "manager":
        manager_pin.set_pin(tmp_path, "4321")

        def gate() -> PinGate:
            return PinGate(tmp_path, _clock)
    else:
        record = manager_pin.pin_record("2468", cashier=True)

        def gate() -> PinGate:
            return PinGate(
                tmp_path,
                _clock,
                throttle_file="cashier-7.throttle",
                verify=lambda typed: manager_pin.record_matches(record, typed),
            )

    first = gate()
    for wrong in ("1111", "2222", "3333")[:FREE_ATTEMPTS]:
        first.check(wrong)
    assert first.wait_s() > 0
    assert cut.cut() == []  # every write of the pause was durable
    after = gate()  # the kiosk starts again on what the card holds
    assert after.check("4321" if whose == "manager" else "2468").result == "locked"


def test_the_pause_model_would_see_the_old_way_of_writing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cut is not a model that keeps everything: the old `_save` (write the temporary
    file, rename it, no sync) loses the pause, the defect of issue 49."""
    cut = PowerCut(tmp_path, monkeypatch)
    path = tmp_path / "manager-pin.throttle"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"failures": 3}), encoding="ascii")
    tmp.replace(path)
    assert path.read_text() != ""
    lost = cut.cut()
    assert lost and not path.exists()


def test_the_language_chosen_on_screen_survives_a_power_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut = PowerCut(tmp_path, monkeypatch)
    remember_language(tmp_path, "en")
    remember_language(tmp_path, "mn")
    assert cut.cut() == []
    assert remembered_language(tmp_path) == "mn"


def test_an_export_is_whole_after_a_power_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut = PowerCut(tmp_path, monkeypatch)
    day = tmp_path / "day.csv"
    with CsvExport(day) as export:
        export.finish([("date", datetime(2024, 5, 2, tzinfo=UTC).date().isoformat())])
    shifts = write_durable(tmp_path / "shifts.csv", b"z_number,shift\r\n1,1\r\n")
    assert cut.cut() == []
    assert day.read_text().splitlines()[-1] == "date,2024-05-02"
    assert shifts.read_bytes() == b"z_number,shift\r\n1,1\r\n"


# --- the inventory ------------------------------------------------------------------------

#: every place in src/ that writes a file, and how a power cut leaves what it wrote
#: (module, function, call) -> how
WRITERS: dict[tuple[str, str, str], str] = {
    ("statedir.py", "write_private", "fdopen"): "durable: fsync, rename, fsync of the dir",
    ("statedir.py", "write_private", "os.replace"): "durable: the rename of write_private",
    ("statedir.py", "_create_exclusive", "os.open"): "write_private's temporary file",
    ("statedir.py", "write_durable", "Path.open"): "durable: fsync, rename, fsync of the dir",
    ("statedir.py", "write_durable", "Path.replace"): "durable: the rename of write_durable",
    ("statedir.py", "probe_write", "os.write"): "doctor's probe: synced, then removed",
    ("reports/csv_export.py", "CsvExport.__enter__", "Path.open"): (
        "the export's partial file; published by finish"
    ),
    ("reports/csv_export.py", "CsvExport.finish", "Path.replace"): (
        "durable: fsync, rename, fsync_dir"
    ),
    ("ledger/store.py", "_connect", "sqlite3.connect"): "the outbox: WAL, synchronous=FULL",
    ("reports/history_cache.py", "HistoryCache.__init__", "sqlite3.connect"): (
        "a cache of the service's history: may lose its last rows, read again from the service"
    ),
    ("ledger/desk.py", "ChargeDesk._exclusive", "os.open"): (
        "the outbox's lock file: empty, only its flock matters"
    ),
    ("cli/kiosk.py", "_logs_off_screen", "FileHandler"): (
        "kiosk.log: a log for a person, not a record; syncing every line would wear the SD "
        "card, and the journal (systemd) keeps the service's own; its last seconds may go"
    ),
    ("cli/printer.py", "_out", "write_bytes"): (
        "`qrpos print --preview`: a picture for a person to look at now, made again at will"
    ),
    ("peripherals/printer.py", "FilePort.send", "Path.open"): (
        "a `file:` printer: a device node or a test's file; the paper is the record and the "
        "print queue in the outbox (SQLite) keeps the slip until the printer took it"
    ),
    ("simulator/store.py", "SqliteStore.__init__", "sqlite3.connect"): (
        "the sandbox's books (a development service, not the kiosk)"
    ),
    ("simulator/openapi.py", "main", "write_text"): (
        "a developer's tool writing the sandbox's API document"
    ),
}

WRITE_MODES = set("wax+")


def _mode(call: ast.Call, position: int) -> str | None:
    for kw in call.keywords:
        if kw.arg == "mode":
            return _text_in(kw.value)
    if len(call.args) > position:
        return _text_in(call.args[position])
    return None


def _text_in(node: ast.expr) -> str | None:
    """The letters of a mode: a string, or either string of `"ab" if x else "wb"`."""
    if isinstance(node, ast.IfExp):
        letters = (_text_in(node.body) or "") + (_text_in(node.orelse) or "")
        return letters or None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _write_call(call: ast.Call) -> str | None:
    """What kind of file write `call` is, or None."""
    func = call.func
    if isinstance(func, ast.Name):
        name, base = func.id, None
    elif isinstance(func, ast.Attribute):
        name = func.attr
        base = func.value.id if isinstance(func.value, ast.Name) else ""
    else:
        return None
    mode: str | None
    if name in ("write_text", "write_bytes", "FileHandler", "mkstemp", "NamedTemporaryFile"):
        return name
    if name == "open" and base is None:
        mode = _mode(call, 1)
        return "open" if mode and set(mode) & WRITE_MODES else None
    if name == "open" and base == "os":
        flags = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
        reads = "O_RDONLY" in flags  # a name (`flags`) may hide a write: listed
        return None if reads and "O_CREAT" not in flags else "os.open"
    if name == "open" and base not in ("wave", "tarfile", "zipfile"):
        mode = _mode(call, 0)
        return "Path.open" if mode and set(mode) & WRITE_MODES else None
    if name == "fdopen":
        mode = _mode(call, 1)
        return "fdopen" if mode and set(mode) & WRITE_MODES else None
    if base == "os" and name in ("replace", "rename", "write"):
        return f"os.{name}"
    if base == "sqlite3" and name == "connect":
        return "sqlite3.connect"
    single = len(call.args) == 1 and not call.keywords
    renames = name in ("replace", "rename") and base not in ("dataclasses", "os")
    if renames and single and not isinstance(call.args[0], ast.Constant):
        return f"Path.{name}"
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.where: list[str] = []
        self.found: set[tuple[str, str, str]] = set()

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.where.append(node.name)
        self.generic_visit(node)
        self.where.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Call(self, node: ast.Call) -> None:
        kind = _write_call(node)
        if kind is not None:
            self.found.add((self.module, ".".join(self.where) or "<module>", kind))
        self.generic_visit(node)


def _writes_in_src() -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for path in sorted(SRC.rglob("*.py")):
        finder = _Finder(path.relative_to(SRC).as_posix())
        finder.visit(ast.parse(path.read_text(encoding="utf-8")))
        found |= finder.found
    return found


def test_every_file_the_kiosk_writes_is_named_with_how_a_cut_leaves_it() -> None:
    found = _writes_in_src()
    unnamed = sorted(found - WRITERS.keys())
    assert not unnamed, (
        "a new file write: make it durable (qrpos.statedir.write_private or "
        f"write_durable) and name it in WRITERS with its reason: {unnamed}"
    )
    stale = sorted(WRITERS.keys() - found)
    assert not stale, f"WRITERS names writes that are no longer in src/: {stale}"


def test_the_scan_sees_the_old_way_of_writing_the_pause() -> None:
    """The scan is not blind to the defect: `tmp.write_text(...)` then `tmp.replace(path)`
    is two writes it reports (so they could not pass unnamed)."""
    old = ast.parse(
        "def _save(self):\n"
        "    tmp = self._path.with_suffix('.tmp')\n"
        "    tmp.write_text('{}', encoding='ascii')\n"
        "    tmp.replace(self._path)\n"
    )
    finder = _Finder("reports/pin_gate.py")
    finder.visit(old)
    assert finder.found == {
        ("reports/pin_gate.py", "_save", "write_text"),
        ("reports/pin_gate.py", "_save", "Path.replace"),
    }
