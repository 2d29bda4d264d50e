"""Issue 47: "charged / refunded / not charged / unknown" has one definition, the
ledger's (`money.money_of`), and its SQL twin (`shifts_sql.MONEY_SQL`) says the same for
every state, `charged` value and refund; no other module classifies a sale's money by a
list of states of its own."""

from __future__ import annotations

import ast
import sqlite3
from collections.abc import Callable, Collection
from itertools import product
from pathlib import Path
from typing import Final

import pytest

from qrpos.ledger.money import Money, is_held, is_sold, money_of
from qrpos.ledger.shifts_sql import MONEY_SQL
from qrpos.ledger.states import CHARGED_STATES, SOLD_STATES, IntentState

SRC = Path(__file__).resolve().parents[2] / "src" / "qrpos"

#: the modules that define the groups (the vocabulary, the table of moves)
DEFINERS = {"ledger/states.py", "ledger/moves.py", "ledger/money.py"}
#: lists of states elsewhere that say nothing of money, with why; each is held to the
#: members it has now, so a list that grows into a classification of money fails
NOT_MONEY = {
    # which sales block the till's next one ("open"), a screen's own wait
    ("tui/sale_states.py", frozenset({"PENDING", "UNRESOLVED", "CREDENTIALS_REJECTED"})),
    # the states the resolver may still send in (the open states, by the timing core)
    ("ledger/timing.py", frozenset({"PENDING", "UNRESOLVED"})),
    # which words the cashier reads after an abandon (both abandoned states)
    ("present/outcome.py", frozenset({"ABANDONED", "REVERSED_AFTER_ABANDON"})),
}
#: the groups only the ledger's definition may read
GROUPS = {"CHARGED_STATES", "SOLD_STATES"}


def test_money_of_follows_the_charged_column_and_a_landed_refund() -> None:
    for state in IntentState:
        if state in CHARGED_STATES:  # charged by its name, whatever an old row's column
            assert money_of(state, None, False) in (Money.CHARGED, Money.REFUNDED)
        else:
            assert money_of(state, None, False) is Money.UNKNOWN
            assert money_of(state, 0, False) is Money.NOT_CHARGED
            assert money_of(state, 0, True) is Money.NOT_CHARGED
        assert money_of(state, 1, False) in (Money.CHARGED, Money.REFUNDED)
        assert money_of(state, 1, True) is Money.REFUNDED
    # the defect: an abandon proven charged holds the money until its refund lands
    assert money_of(IntentState.ABANDONED, 1, False) is Money.CHARGED
    assert is_held(IntentState.ABANDONED, 1, False) and not is_sold(IntentState.ABANDONED, 1, False)
    assert money_of(IntentState.NEEDS_REVIEW, 1, False) is Money.CHARGED  # refund refused
    assert money_of(IntentState.NEEDS_REVIEW, None, False) is Money.UNKNOWN
    assert money_of(IntentState.ABANDONED, None, False) is Money.UNKNOWN  # watched
    assert money_of(IntentState.ABANDONED, 0, False) is Money.NOT_CHARGED
    assert money_of(IntentState.REVERSED_AFTER_ABANDON, 1, False) is Money.REFUNDED
    assert money_of(IntentState.REFUNDED_PER_REVIEW, 1, False) is Money.CHARGED  # queued
    for state in SOLD_STATES:
        assert is_sold(state, 1, False) and not is_sold(state, 1, refunded=True)


def test_the_sql_twin_says_what_the_function_says() -> None:
    """Every state × `charged` × (no refund, a refused one, a landed one), in SQLite."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE charge_intent (id INTEGER PRIMARY KEY, state, charged, tx_id)")
    conn.execute("CREATE TABLE reversal (id INTEGER PRIMARY KEY, tx_id, state)")
    cases = list(product(IntentState, (None, 0, 1), (None, "refused", "refunded")))
    for n, (state, charged, refund) in enumerate(cases):
        tx = f"tx_{n}"
        conn.execute(
            "INSERT INTO charge_intent (id, state, charged, tx_id) VALUES (?, ?, ?, ?)",
            (n, state.value, charged, tx),
        )
        if refund is not None:
            conn.execute("INSERT INTO reversal (tx_id, state) VALUES (?, ?)", (tx, refund))
    got = dict(conn.execute(f"SELECT id, {MONEY_SQL} FROM charge_intent").fetchall())
    for n, (state, charged, refund) in enumerate(cases):
        assert Money(got[n]) is money_of(state, charged, refund == "refunded"), (
            state,
            charged,
            refund,
        )


_STATE_VALUES: Final = frozenset(s.value for s in IntentState)


def _states_in(node: ast.AST) -> frozenset[str]:
    """The `IntentState.X` members a literal collection (or frozenset/set of one) lists."""
    if isinstance(node, ast.Call):
        named = isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple")
        return _states_in(node.args[0]) if named and node.args else frozenset()
    if not isinstance(node, ast.Tuple | ast.List | ast.Set):
        return frozenset()
    members = frozenset(
        e.attr
        for e in node.elts
        if isinstance(e, ast.Attribute)
        and isinstance(e.value, ast.Name)
        and e.value.id == "IntentState"
        and e.attr in IntentState.__members__
    )
    # the same list written as the states' stored names ("pending", "unresolved"): how a
    # metrics module kept its own "unresolved" past this check (review of issue 47)
    # (only a collection of nothing but state names: a tone's or a kind's words may share one)
    spelled = [
        e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
    ]
    if spelled and len(spelled) == len(node.elts) and set(spelled) <= _STATE_VALUES:
        return members | frozenset(IntentState(v).name for v in spelled)
    return members


def own_lists(source: str, where: str) -> list[str]:
    """Where `source` classifies by a list of states of its own, or reads a group only
    the ledger's definition may read."""
    found = []
    tree = ast.parse(source)
    # a type's words (`Literal["refunded", "refused", ...]`) classify nothing
    typed = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
    for node in ast.walk(tree):
        if id(node) in typed:
            continue
        if isinstance(node, ast.Name) and node.id in GROUPS:
            found.append(f"{where}:{node.lineno} reads {node.id}")
        if isinstance(node, ast.Attribute) and node.attr in GROUPS:
            found.append(f"{where}:{node.lineno} reads {node.attr}")
        if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Call):
            members = _states_in(node)
            if len(members) >= 2 and (where, members) not in NOT_MONEY:
                found.append(f"{where}:{node.lineno} lists {sorted(members)}")
    return found


def test_no_module_classifies_money_by_its_own_list_of_states() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where in DEFINERS or where == "ledger/__init__.py":  # (re-exports the names)
            continue
        found += own_lists(path.read_text(encoding="utf-8"), where)
    assert found == [], "use qrpos.ledger.money.money_of / is_sold:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "charged = state in (IntentState.APPROVED, IntentState.CHARGED_PER_HISTORY)",
        "_X = frozenset({IntentState.PENDING, IntentState.UNRESOLVED})",
        "from qrpos.ledger.states import CHARGED_STATES",
        "ok = row.state in states.SOLD_STATES",
        '_UNRESOLVED = frozenset({"pending", "unresolved"})',
    ],
)
def test_the_check_sees_an_own_list(source: str) -> None:
    """The check is not blind: each way the old code classified is found."""
    assert own_lists(source.replace("from qrpos.ledger.states import ", "x = "), "m.py")


#: the ledger's readers of a sale's money; outside the ledger each must be told whether a
#: refund of the sale's row landed (the ledger's views carry it: `SaleResult.refunded`,
#: `IntentView.money`)
READERS: Final = {"money_of", "is_sold", "is_held"}


def blind_reads(source: str, where: str) -> list[str]:
    """Where `source` asks the ledger's definition about a sale's money without saying
    whether a refund of its row landed (the argument left out, or a literal False): a
    sale approved, then refunded by hand, would read "charged"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        if name not in READERS or not node.args:
            continue  # (a `lock.is_held()` of another kind reads no sale)
        refunded = node.args[2] if len(node.args) > 2 else None
        for keyword in node.keywords:
            if keyword.arg == "refunded":
                refunded = keyword.value
        if refunded is None or (isinstance(refunded, ast.Constant) and refunded.value is False):
            found.append(f"{where}:{node.lineno} calls {name} without the landed refund")
    return found


def outside_the_ledger(
    check: Callable[[str, str], list[str]], besides: Collection[str] = ()
) -> list[str]:
    """What `check` finds in every module of src/qrpos outside ledger/ (and `besides`)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if not where.startswith("ledger/") and where not in besides:
            found += check(path.read_text(encoding="utf-8"), where)
    return found


def test_outside_the_ledger_no_read_of_money_forgets_a_landed_refund() -> None:
    """`qrpos outbox resolve` printed "charged" for a sale refunded by hand (its line
    passed refunded=False); the ledger's own modules read rows whose refund they know."""
    found = outside_the_ledger(blind_reads)
    assert found == [], "pass the landed refund (SaleResult.money / .sold):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "money = money_of(result.state, result.charged, refunded=False).value",
        "if is_sold(state, result.charged): pass",
        "held = money.is_held(r.state, r.charged, False)",
    ],
)
def test_the_check_sees_a_blind_read(source: str) -> None:
    assert blind_reads(source, "m.py")
    assert not blind_reads(source.replace("False", "gone").replace("charged)", "charged, x)"), "")


#: modules that read a `charged` column as "did the charge happen", never as "paid": the
#: reconciliation compares the charges that happened with the service's rows
CHARGE_HAPPENED: Final = {"reports/reconcile.py"}


def truthy_charged(source: str, where: str) -> list[str]:
    """Where `source` takes a `.charged` as "paid" (`if x.charged`, `not x.charged`, an
    `and`/`or` of it): a sale charged in review, or refunded since, is not paid."""
    tests: list[ast.expr] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
            tests.append(node.test)
        elif isinstance(node, ast.BoolOp):
            tests.extend(node.values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            tests.append(node.operand)
    return [
        f"{where}:{test.lineno} reads .charged as paid"
        for test in tests
        if isinstance(test, ast.Attribute)
        and test.attr == "charged"
        # `qrpos outbox review --charged TX`: the option's value, a transaction id
        and not (isinstance(test.value, ast.Name) and test.value.id == "args")
    ]


def test_outside_the_ledger_charged_is_never_read_as_paid() -> None:
    """`qrpos verify` went on as "approved" for a sale charged but in review (`not
    sale.charged`); `SaleResult.sold` is what "paid" means."""
    found = outside_the_ledger(truthy_charged, besides=CHARGE_HAPPENED)
    assert found == [], "read SaleResult.sold / .money:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "if not sale.charged or sale.transaction is None: pass",
        "ok = result.charged and result.transaction",
        "if row.charged: pass",
    ],
)
def test_the_check_sees_charged_read_as_paid(source: str) -> None:
    assert truthy_charged(source, "m.py")
    assert not truthy_charged(source.replace(".charged", ".sold"), "m.py")
