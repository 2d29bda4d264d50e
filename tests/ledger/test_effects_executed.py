"""Every effect of the table of moves is carried out by somebody (issue 47).

A cell's effects (`qrpos.ledger.events.Effect`) are what the drivers do after committing
its move; one that no code reads is a promise the table makes and the till does not keep
(`answer_cashier` was such a one: the drive returned the till by its own rule). Two checks:

- by the syntax trees: every effect some cell of the table produces (`moves.SALE_MOVES`,
  `moves.REFUND_MOVES`) is named (`Effect.X`, code, not prose) by a module above the
  decision core: the storage floor's rules that apply a move in a commit, a driver, or
  the desk (the floors: tests/ledger/test_ledger_floors.py);
- by running them: sales are driven through the real desk and drive against the
  in-process sandbox, every move the drive applies is recorded, and each of its effects
  must show: `answer_cashier` returns the till at once, `send` and `look_up` are the next
  thing done, `open_review` leaves the sale's review with the move's reason,
  `stop_watching` leaves the sale unwatched, `refund` leaves the row's refund queued.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_ledger_floors import declared_floors

import qrpos.ledger
from qrpos.ledger import desk as desk_module
from qrpos.ledger import refunds_sql, resolver, reviews_sql
from qrpos.ledger.desk import ChargeDesk
from qrpos.ledger.events import Cell, Effect, Move, SaleEvent
from qrpos.ledger.lookup import check_history
from qrpos.ledger.moves import REFUND_MOVES, SALE_MOVES, sale_cell
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import IntentRow, IntentState
from qrpos.ledger.store import Ledger
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

LEDGER = Path(qrpos.ledger.__file__).parent


def produced_effects() -> set[Effect]:
    """Every effect some cell of the table produces (a sale's or a refund's)."""
    tables: list[dict[Any, dict[Any, Cell]]] = [dict(SALE_MOVES), dict(REFUND_MOVES)]
    return {
        effect
        for table in tables
        for row in table.values()
        for cell in row.values()
        if isinstance(cell, Move)
        for effect in cell.effects
    }


def effects_named(source: str) -> set[str]:
    """The `Effect` members a module's code names (`Effect.X`, or under an alias of it)."""
    tree = ast.parse(source)
    aliases = {"Effect"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "qrpos.ledger.events":
            aliases |= {a.asname or a.name for a in node.names if a.name == "Effect"}
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in aliases
    }


def appliers() -> dict[str, set[str]]:
    """The modules above the decision core, and the effects each one's code names."""
    core = declared_floors()[0].modules
    return {
        path.stem: effects_named(path.read_text(encoding="utf-8"))
        for path in sorted(LEDGER.glob("*.py"))
        if path.stem not in core and path.stem != "__init__"
    }


def test_every_effect_the_table_produces_is_named_by_a_driver() -> None:
    named = set().union(*appliers().values())
    unapplied = sorted(e.name for e in produced_effects() if e.name not in named)
    assert unapplied == [], f"effects of the table that no driver carries out: {unapplied}"


def test_answer_cashier_is_carried_out_by_the_drive() -> None:
    """The effect the issue found applied by nobody: the resolver's drive reads it now."""
    assert "ANSWER_CASHIER" in appliers()["resolver"]


def test_the_scan_sees_effects_in_code_and_not_in_prose() -> None:
    source = (
        '"""`Effect.WATCH` in a docstring is prose."""\n'
        "from qrpos.ledger.events import Effect as F\n"
        "G = F\n"
        "def f(move):\n"
        "    # Effect.REFUND in a comment is prose too\n"
        "    return F.SEND in move.effects or G.LOOK_UP in move.effects\n"
    )
    assert effects_named(source) == {"SEND", "LOOK_UP"}
    assert "SEND" in {e.name for e in produced_effects()}


# --- the real drivers ------------------------------------------------------------------


@dataclass
class Step:
    """One thing the drive did: a send, a look, a step of time passing, or its return."""

    kind: str  # "send" | "look" | "step" | "return"
    move: Move | None = None
    event: SaleEvent | None = None
    after: IntentRow | None = None


@dataclass
class Recorder:
    """Every drive of the desk, the moves it applied in order, and what the outbox showed
    right after each (checked as it happens: a later step may change it)."""

    ledger: Ledger
    drives: list[list[Step]] = field(default_factory=list)
    seen: set[Effect] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    def applied(self, kind: str, row: IntentRow, move: Move | None) -> None:
        self.drives[-1].append(Step(kind, move, after=row))
        if move is None:
            return
        self.seen |= set(move.effects)
        if Effect.OPEN_REVIEW in move.effects:
            review = self.ledger.read(lambda c: reviews_sql.review_of(c, row.id))
            if review is None or review[0] != move.review:
                self.problems.append(f"#{row.id} {move}: no review {move.review} ({review})")
        if Effect.STOP_WATCHING in move.effects and row.watching:
            self.problems.append(f"#{row.id} {move}: still watched")
        if Effect.REFUND in move.effects:
            tx_id = row.tx_id or ""
            if self.ledger.read(lambda c: refunds_sql.reversal_for_tx(c, tx_id)) is None:
                self.problems.append(f"#{row.id} {move}: no refund of {tx_id!r} queued")


def _next_action(steps: list[Step], after: int) -> str:
    """What the drive did next after step `after`: a send, a look, or it returned."""
    for step in steps[after + 1 :]:
        if step.kind != "step" or step.event is SaleEvent.NEVER_DELIVERED:
            return step.kind if step.kind != "step" else "never_delivered"
    return "return"


def carried_out(drives: list[list[Step]]) -> list[str]:
    """The effects of the drives' moves that the drive itself did not carry out."""
    problems = []
    for steps in drives:
        for i, step in enumerate(steps):
            if step.move is None:
                continue
            effects, then = step.move.effects, _next_action(steps, i)
            applied_here = step.kind in ("send", "look") or step.event is SaleEvent.NEVER_DELIVERED
            if Effect.ANSWER_CASHIER in effects and applied_here and steps[i + 1].kind != "return":
                problems.append(f"{step.move}: the till was held after answer_cashier")
            if Effect.SEND in effects and then not in ("send", "return"):
                problems.append(f"{step.move}: a send was due, the drive did {then}")
            if Effect.LOOK_UP in effects and then not in ("look", "return"):
                problems.append(f"{step.move}: a look was due, the drive did {then}")
    return problems


@pytest.fixture
def recorder(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """The desk's drive, the drive's send, look and time steps, each wrapped to record."""
    seen = Recorder(ledger)
    real_drive, real_send, real_look, real_cell = (
        resolver.drive,
        resolver.send_once,
        check_history,
        sale_cell,
    )

    async def drive(*args: Any, **kwargs: Any) -> IntentRow:
        seen.drives.append([])
        row = await real_drive(*args, **kwargs)
        seen.drives[-1].append(Step("return", after=row))
        return row

    async def send_once(ctx: Any, row: IntentRow, *, first: bool) -> tuple[IntentRow, Move]:
        row, move = await real_send(ctx, row, first=first)
        seen.applied("send", row, move)
        return row, move

    async def look(ctx: Any, row: IntentRow) -> tuple[IntentRow, Move | None]:
        row, move = await real_look(ctx, row)
        seen.applied("look", row, move)
        return row, move

    def step_cell(state: IntentState, event: SaleEvent) -> Cell:
        cell = real_cell(state, event)
        move = cell if isinstance(cell, Move) else None
        seen.drives[-1].append(Step("step", move, event))
        if move is not None:
            seen.seen |= set(move.effects)
        return cell

    monkeypatch.setattr(desk_module, "drive", drive)
    monkeypatch.setattr(desk_module, "check_history", look)
    monkeypatch.setattr(resolver, "send_once", send_once)
    monkeypatch.setattr(resolver, "sale_cell", step_cell)
    return seen


@dataclass(frozen=True)
class Story:
    """A sale the desk drives against the sandbox, and what the drive must have done."""

    name: str
    arrange: Callable[[Sandbox, TerminalCredentials], None]
    policy: dict[str, float | int | bool]
    ends: IntentState
    effects: frozenset[Effect]


def _nothing(sandbox: Sandbox, terminal: TerminalCredentials) -> None:
    del sandbox, terminal


def _unclear_once(sandbox: Sandbox, terminal: TerminalCredentials) -> None:
    sandbox.arm_fault("error_after_commit", operation="charge")


def _never_committed(sandbox: Sandbox, terminal: TerminalCredentials) -> None:
    sandbox.arm_fault("error_before_commit", count=10, operation="charge")


def _rate_limited(sandbox: Sandbox, terminal: TerminalCredentials) -> None:
    sandbox.arm_fault("rate_limit", count=1000, retry_after=0)


def _two_rows(sandbox: Sandbox, terminal: TerminalCredentials) -> None:
    sandbox.seed_charge(terminal.username, 800, datetime.now(UTC))
    sandbox.arm_fault("drop_after_commit")
    sandbox.arm_fault("forget_idempotency", count=2)


F = Effect
STORIES = [
    Story("approved", _nothing, {}, IntentState.APPROVED, frozenset({F.SEND, F.ANSWER_CASHIER})),
    Story(
        "unclear_then_approved",
        _unclear_once,
        {},
        IntentState.APPROVED,
        frozenset({F.SEND, F.WAIT, F.ANSWER_CASHIER}),
    ),
    Story(
        "never_committed",
        _never_committed,
        {},
        IntentState.NOT_CHARGED,
        frozenset({F.SEND, F.WAIT, F.LOOK_UP, F.ANSWER_CASHIER}),
    ),
    Story(
        "never_delivered",
        _rate_limited,
        {"max_sends": 1},
        IntentState.NOT_CHARGED,
        frozenset({F.SEND, F.WAIT, F.ANSWER_CASHIER}),
    ),
    Story(
        "two_rows_to_a_person",
        _two_rows,
        {},
        IntentState.NEEDS_REVIEW,
        frozenset({F.SEND, F.LOOK_UP, F.OPEN_REVIEW, F.STOP_WATCHING, F.ANSWER_CASHIER}),
    ),
]


@pytest.mark.parametrize("story", STORIES, ids=[s.name for s in STORIES])
async def test_the_drive_carries_out_every_effect_of_the_moves_it_applies(
    story: Story,
    recorder: Recorder,
    ledger: Ledger,
    asgi_client: TerminalClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing(**story.policy))
    story.arrange(sandbox, terminal)
    amount = 800 if story.name == "two_rows_to_a_person" else 500
    result = await desk.charge(amount, wallet.qr_token, deadline_s=5)
    assert result.state is story.ends, result
    assert recorder.problems == []
    assert carried_out(recorder.drives) == []
    # the story reached the effects it is about (a drive that did nothing proves nothing)
    assert story.effects <= recorder.seen, sorted(story.effects - recorder.seen)


def test_the_check_of_the_drive_finds_a_till_held_and_a_send_not_made() -> None:
    answered = Move(IntentState.APPROVED, (F.ANSWER_CASHIER,))
    confirm = Move(IntentState.PENDING, (F.SEND,))
    held = [Step("send", answered), Step("look", None), Step("return")]
    looked = [Step("look", confirm), Step("look", None), Step("return")]
    assert carried_out([held]) == [f"{answered}: the till was held after answer_cashier"]
    assert carried_out([looked]) == [f"{confirm}: a send was due, the drive did look"]
    assert carried_out([[Step("send", answered), Step("return")]]) == []
