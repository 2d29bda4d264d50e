"""The till simulator (issue 47): the real `ChargeDesk` on a real SQLite file, against the
sandbox service in the same process, on virtual time, with seeded faults, kills, a second
install, re-pairing, abandons, reviews, refunds and X/Z reports; invariants checked
against the sandbox's books after every step. See docs/simulation.md.

One seed gives one `Story` (a list of `Step`s drawn up front); `run_story` plays it and
returns its event log and the first invariant broken. `shrink` cuts a failing story down.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.util
import json
import os
import random
import sys
import tempfile
from collections.abc import Sequence
from email.utils import formatdate
from pathlib import Path
from typing import Any

import httpx
from tillsim_loop import (
    Killed,
    VirtualClocks,
    VirtualLoop,
    drop_ledger,
    open_inline_ledger,
    patched_world,
)

from qrpos import spec
from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    MarkCharged,
    MarkNotCharged,
    RefundRow,
    refunds_sql,
    reviews,
    sales_sql,
    service_sql,
    shifts,
    shifts_sql,
)
from qrpos.ledger.reviews import ReviewRefused
from qrpos.ledger.states import CHARGED_STATES, SOLD_STATES, IntentRow, ReversalState
from qrpos.ledger.store import Ledger
from qrpos.ledger.typed_rows import intent_row
from qrpos.ledger.views import ChargeRefusedLocally
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app
from qrpos.simulator.model import Terminal
from qrpos.simulator.testing import SandboxTransport

#: the suite's budget (tests/tillsim): these seeds' stories of this many steps, played on
#: the real code (no invariant may break) and under each mutant (one must: test_mutants.py)
#: (17 and 21 break "never 'not charged' while charged" on today's main, under triage in
#: src/: left out until fixed, docs/simulation.md)
BUDGET_SEEDS = tuple(range(1, 21))
BUDGET_STEPS = 30
#: a canteen's set-menu prices: same-price sales all day
SET_PRICES = (4500, 6000, 7500, 9000)
#: what one of the kiosk's requests can meet (None: it passes)
FAULTS = (
    "refused",  # the connection is refused: nothing reached the service
    "drop_before",  # the connection dies before the request reached the service
    "drop_after",  # committed, the connection dies before the reply
    "5xx_before",
    "5xx_after",
    "429_seconds",  # Retry-After in seconds
    "429_date",  # Retry-After as an HTTP date (on the service's clock)
    "garbled",  # committed, the reply's body is cut short
    "trickle",  # committed, the reply comes a byte a second
    "slow",  # the service holds it past the client's timeout, then commits
    "forget_key",  # the service has forgotten the idempotency key
    "forbidden",  # a refund refused (403); on a charge it passes
)
#: faults that make a request's fate unknown to the kiosk (a storm of them stalls a sale)
STALLING = ("refused", "drop_before", "5xx_before", "429_seconds", "429_date")
CLIENT_TIMEOUT_S = spec.CLIENT_TIMEOUT_S
#: how long the cashier waits for a definite answer before abandoning (the target is 45 s)
PATIENCE_S = 60.0
#: how often the till drives an open sale again (the kiosk's `resolve_every_s`)
RESOLVE_EVERY_S = 3.0
#: the kiosk's wall-clock steps (NTP), both ways by hours
KIOSK_STEPS_S = (-3 * 3600.0, -45 * 60.0, 2 * 3600.0, 5 * 3600.0)
SERVICE_OFFSETS_S = (0.0, 150.0, -150.0, 600.0, -600.0)
STEP_KINDS = ("sale", "sale", "sale", "sale", "stranger", "clock", "x", "z", "owner", "repair")

if importlib.util.find_spec("sniffio") is None:
    # httpx's in-process ASGI transport asks `import sniffio` on every request (to tell
    # trio from asyncio); with no sniffio installed each ask searches sys.path again
    # (0.11 ms here, against 2 us): a None entry makes the ask fail at once
    sys.modules["sniffio"] = None  # type: ignore[assignment]


@dataclasses.dataclass
class Step:
    """One thing that happens in a story; `faults` are what the kiosk's requests meet in
    turn during it (after them, requests pass)."""

    index: int
    kind: str
    amount: int = 0
    faults: list[str | None] = dataclasses.field(default_factory=list)
    #: a sale: the cashier abandons after this many seconds without an answer (None: waits)
    abandon_after_s: float | None = None
    #: a sale: the kiosk process is killed at this request (before it reaches the
    #: service, or after its commit) or after this many seconds
    kill_at_request: int | None = None
    kill_after_commit: bool = False
    kill_after_s: float | None = None
    #: a sale: another install on the same credentials charges the same amount this many
    #: seconds into it
    stranger_at_s: float | None = None
    #: a sale: the terminal's password is rotated at this request (401s until re-paired)
    rotate_at_request: int | None = None
    #: clock: the kiosk's wall-clock step, the service's offset
    seconds: float = 0.0
    service_offset_s: float = 0.0
    #: repair: to another terminal (else the same one with a new password)
    other_terminal: bool = False
    #: owner: settles by the truth, or refunds instead of keeping
    refund_instead: bool = False
    #: an episode's name (a sale aimed at one story: `EPISODES`), None for a drawn step
    episode: str | None = None
    #: a sale: the faults each operation's requests meet in turn ("charge", "list",
    #: "reverse"), after `faults`; then the operation's `op_mode` (a fault every request
    #: meets until the script changes it)
    by_op: dict[str, list[str | None]] = dataclasses.field(default_factory=dict)
    op_mode: dict[str, str] = dataclasses.field(default_factory=dict)
    #: a sale: what comes before it and what follows it in the same step, faults still
    #: armed (`World._act`)
    prelude: list[str] = dataclasses.field(default_factory=list)
    script: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        parts = [f"#{self.index} {self.kind}"]
        if self.amount:
            parts.append(f"{self.amount} MNT")
        shown = [f or "ok" for f in self.faults]
        if any(f is not None for f in self.faults):
            parts.append("faults " + ",".join(shown))
        for name in (
            "abandon_after_s",
            "kill_at_request",
            "kill_after_s",
            "stranger_at_s",
            "rotate_at_request",
        ):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value:g}")
        if self.kill_after_commit:
            parts.append("kill_after_commit")
        if self.kind == "clock":
            parts.append(f"kiosk {self.seconds:+g}s service {self.service_offset_s:+g}s")
        if self.kind == "repair":
            parts.append("another terminal" if self.other_terminal else "same terminal")
        if self.kind == "owner" and self.refund_instead:
            parts.append("refunds what was charged")
        if self.episode is not None:
            parts.insert(1, f"[{self.episode}]")
        for op, faults in sorted(self.by_op.items()):
            parts.append(f"{op} faults {','.join(f or 'ok' for f in faults)}")
        for op, mode in sorted(self.op_mode.items()):
            parts.append(f"then every {op} {mode}")
        if self.prelude:
            parts.insert(2, "first " + "; ".join(self.prelude) + ";")
        if self.script:
            parts.append("then " + "; ".join(self.script))
        return " ".join(parts)


@dataclasses.dataclass
class Story:
    seed: int
    steps: list[Step]
    #: drawn with episodes (`draw_step`); False: the plain draw of before them (`--plain`)
    episodes: bool = True


def _fault_list(rng: random.Random, storm: float) -> list[str | None]:
    out: list[str | None] = []
    for _ in range(rng.choice((0, 0, 1, 2, 3, 4, 6))):
        out.append(rng.choice(FAULTS) if rng.random() < storm else None)
    if rng.random() < 0.15:  # a storm: every request for a while stalls
        out.extend(rng.choice(STALLING) for _ in range(rng.randint(4, 14)))
    return out


#: the share of a story's steps replaced by an episode
EPISODE_SHARE = 0.16
#: the episodes, with their weights: each a sale aimed at a story the plain draw reaches
#: too seldom (issue 47's four defects, issue 41's two), played through the real kiosk
EPISODES = (
    ("abandon_stranger", 2),
    ("storm_confirm", 3),
    ("abandon_refund_by_hand", 2),
    ("abandon_refund_from_review", 3),
    ("repair_lost_201", 2),
)
#: committed at the service, the reply lost
LOST_REPLY = ("drop_after", "garbled", "5xx_after")


def draw_episode(seed: int, index: int) -> Step | None:
    """Step `index` as an episode, or None (the plain draw stands): drawn from its own
    generator, so the plain steps of a story are the ones they were before episodes."""
    rng = random.Random(f"{seed}:{index}:episode")
    if rng.random() >= EPISODE_SHARE:
        return None
    names = [name for name, _ in EPISODES]
    name = rng.choices(names, weights=[w for _, w in EPISODES])[0]
    step = Step(index, "sale", amount=rng.choice(SET_PRICES), episode=name)
    # the owner has dealt with what earlier steps left: the other install's warning is
    # cleared, a rotated password re-paired (else every window stays a person's question,
    # or nothing is sent, and the episode's story is not played)
    step.prelude = ["clear the warning", "re-pair if needed"]
    if name == "abandon_stranger":
        # every send fails before anything commits (the history unreadable meanwhile); the
        # cashier abandons; another install on the same credentials charged the same
        # amount inside the sale's window; the history answers again
        step.op_mode = {"charge": rng.choice(("5xx_before", "drop_before")), "list": "5xx_before"}
        step.abandon_after_s = rng.choice((20.0, 45.0))
        step.stranger_at_s = round(rng.uniform(1.0, step.abandon_after_s - 1.0), 1)
        step.script = ["history answers", "recover"]
    elif name == "storm_confirm":
        # another install's row of the price is there; the sale's first sends fail before
        # committing, the history shows the row, and the confirming sends meet 429s
        step.prelude.append("another install charges")
        # (a Retry-After date on a service clock 10 minutes off is a minute's wait, bounded:
        # the cashier gives up before the storm ends; mostly seconds, then)
        storm = rng.choices(("429_seconds", "429_date"), weights=(4, 1), k=rng.randint(2, 6))
        step.by_op = {"charge": ["5xx_before", "5xx_before", *storm]}
    elif name in ("abandon_refund_by_hand", "abandon_refund_from_review"):
        # committed, its reply lost, every resend fails before committing, the history
        # unreadable; the cashier abandons; the history answers again; the owner refunds
        # the charge (by hand, or from the review the history opens); the refund stalls
        # across an X/Z (and a wall-clock step back by hours), then is refused or lands
        step.by_op = {"charge": [rng.choice(LOST_REPLY)]}
        step.op_mode = {"charge": "5xx_before", "list": "5xx_before"}
        step.abandon_after_s = rng.choice((20.0, 45.0))
        if name == "abandon_refund_by_hand":
            step.script = ["stall reverse", "reverse by hand", "history answers", "recover"]
        else:
            step.script = ["history answers", "recover", "stall reverse", "owner refunds"]
        step.script += rng.choice((["x", "z"], ["z"], ["x"]))
        if rng.random() < 0.6:
            step.script.append(f"clock back {rng.choice((45 * 60, 2 * 3600, 3 * 3600))}")
        step.script += ["refuse reverse" if rng.random() < 0.6 else "heal", "recover", "z"]
    else:
        # committed, its reply lost; the terminal's password is rotated (401s); the owner
        # re-pairs the kiosk to another terminal and settles the review by naming the row
        step.by_op = {"charge": [rng.choice(LOST_REPLY)]}
        step.rotate_at_request = 2
        step.abandon_after_s = rng.choice((5.0, 20.0))
        step.script = ["re-pair another terminal", "owner"]
    return step


def draw_step(seed: int, index: int, episodes: bool = True) -> Step:
    """Step `index` of seed `seed`: drawn from its own generator, so removing steps from a
    story leaves the others as they were (what shrinking needs). With `episodes`, a share
    of the steps are episodes (`draw_episode`) instead."""
    if episodes and (episode := draw_episode(seed, index)) is not None:
        return episode
    rng = random.Random(f"{seed}:{index}")
    kind = rng.choice(STEP_KINDS)
    step = Step(index, kind)
    if kind in ("sale", "stranger"):
        step.amount = rng.choice(SET_PRICES) if rng.random() < 0.9 else rng.randint(1, 50_000)
    if kind == "sale":
        step.faults = _fault_list(rng, 0.6)
        if rng.random() < 0.3:
            step.abandon_after_s = rng.choice((5.0, 20.0, 45.0))
        if rng.random() < 0.12:
            if rng.random() < 0.5:
                step.kill_at_request = rng.randint(1, 4)
                step.kill_after_commit = rng.random() < 0.5
            else:
                step.kill_after_s = round(rng.uniform(0.0, 40.0), 1)
        if rng.random() < 0.3:
            step.stranger_at_s = round(rng.uniform(0.0, 60.0), 1)
        if rng.random() < 0.05:
            step.rotate_at_request = rng.randint(1, 3)
    elif kind == "clock":
        step.seconds = rng.choice((*KIOSK_STEPS_S, 0.0))
        step.service_offset_s = rng.choice(SERVICE_OFFSETS_S)
    elif kind == "repair":
        step.other_terminal = rng.random() < 0.6
    elif kind == "owner":
        step.refund_instead = rng.random() < 0.3
    return step


def draw_story(seed: int, steps: int, episodes: bool = True) -> Story:
    return Story(seed, [draw_step(seed, i, episodes) for i in range(steps)], episodes)


# --- the books and the invariants ---------------------------------------------------------


@dataclasses.dataclass
class Broken(Exception):
    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.detail}"


@dataclasses.dataclass
class SaleRecord:
    """What the simulator knows of one of the kiosk's sales (the outbox does not keep the
    wallet): its step, wallet and token digest."""

    step: int
    wallet_id: str
    digest: str
    amount: int
    intent_id: int | None = None
    #: the Z report numbers that counted it "not charged" while its wallet was charged
    miscounted_in_z: list[int] = dataclasses.field(default_factory=list)


class FaultyTransport(httpx.AsyncBaseTransport):
    """The kiosk's way to the sandbox: in-process ASGI plus the fault each request meets."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.inner = SandboxTransport(world.app)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        world = self.world
        op = _operation(request)
        fault, kill_before, kill_after = world.next_request(op)
        world.log(f"request {op} {fault or 'ok'}")
        if kill_before:
            await world.kill_now()
        if world.rotate_pending:
            world.rotate_now()
        if fault == "refused":
            raise httpx.ConnectError("connection refused", request=request)
        if fault == "drop_before":
            raise httpx.RemoteProtocolError("server disconnected", request=request)
        armed = {
            "drop_after": ("drop_after_commit", {}),
            "5xx_before": ("error_before_commit", {}),
            "5xx_after": ("error_after_commit", {}),
            "429_seconds": ("rate_limit", {"retry_after": 3.0}),
            "429_date": ("rate_limit", {"retry_after": 3.0}),
            "trickle": ("trickle", {"bytes_per_s": 1.0}),
            "slow": ("delay", {"seconds": CLIENT_TIMEOUT_S + 2.0}),
            "forget_key": ("forget_idempotency", {}),
            "forbidden": ("forbidden", {}),
        }.get(fault or "")
        if fault == "forbidden" and op != "reverse":
            armed = None
        if armed is not None:
            world.sandbox.arm_fault(armed[0], 1, operation=op, **armed[1])
        try:
            response = await self.inner.handle_async_request(request)
        finally:
            world.sandbox.clear_faults()
        if fault == "429_date" and response.status_code == 429:
            when = world.clocks.true_wall() + world.service_offset_s + 3.0
            response.headers["Retry-After"] = formatdate(when, usegmt=True)
        if fault == "garbled":
            body = await response.aread()
            response = httpx.Response(
                response.status_code,
                headers=[(k, v) for k, v in response.headers.items() if k != "content-length"],
                content=body[: len(body) // 2],
                request=request,
            )
        if kill_after:
            await world.kill_now()
        return response


def _operation(request: httpx.Request) -> str:
    path = request.url.path
    if path.endswith("charge-by-token"):
        return "charge"
    if path.endswith("/reverse"):
        return "reverse"
    if path == spec.LIST_PATH:
        return "list"
    return "other"


class World:
    """One run: the sandbox, the kiosk process (replaced at each kill), the books."""

    def __init__(self, story: Story, base: Path, loop: VirtualLoop, clocks: VirtualClocks) -> None:
        self.story = story
        self.base = base
        self.loop = loop
        self.clocks = clocks
        self.events: list[str] = []
        self.sandbox = Sandbox(
            SimulatorOptions(rate_limit_enabled=False),
            clock=clocks.true_now,
        )
        self.app = create_app(self.sandbox)
        creds = self.sandbox.create_terminal()
        self.username, self.password = creds.username, creds.password
        #: every terminal the kiosk has been paired to (their charges are the kiosk's)
        self.usernames = [self.username]
        self.service_offset_s = 0.0
        self.sales: dict[str, SaleRecord] = {}  # by wallet id
        self.stranger_wallets: set[str] = set()
        self.step: Step | None = None
        self.request_no = 0
        #: this step's requests so far, by operation (`Step.by_op`)
        self.op_no: dict[str, int] = {}
        #: the fault every request of an operation meets now (`Step.op_mode`, the script)
        self.op_mode: dict[str, str] = {}
        self.rotate_pending = False
        #: the password was rotated and the kiosk not re-paired since
        self.rotated = False
        self.task: asyncio.Task[Any] | None = None
        self.kills = 0
        self._decoded: dict[tuple[Any, ...], IntentRow] = {}
        self.ledger: Ledger
        self.desk: ChargeDesk
        self.shift: shifts.Shift | None = None
        self._open_process()
        cashier = shifts.add_cashier(self.ledger, "Bold", "x", at=clocks.kiosk_now())
        self.shift = shifts.open_shift(self.ledger, cashier, at=clocks.kiosk_now())
        self.cashier = cashier

    # --- the kiosk process -------------------------------------------------------------

    def log(self, text: str) -> None:
        self.events.append(f"{self.loop.vt:10.3f} {text}")

    def _open_process(self) -> None:
        self.ledger, self.executor = open_inline_ledger(self.base / "outbox.sqlite3")
        client = TerminalClient(
            "http://127.0.0.1:8080",
            self.username,
            self.password,
            timeout_s=CLIENT_TIMEOUT_S,
            transport=FaultyTransport(self),
        )
        rng = random.Random(f"{self.story.seed}:jitter:{self.kills}")
        self.desk = ChargeDesk(
            self.ledger,
            client,
            clock=self.clocks.kiosk_now,
            boot_clock=self.clocks.boot_stamp,
            jitter=rng.random,
        )

    async def kill_now(self) -> None:
        """Kill the kiosk process at this await: its task is cancelled, its connection
        dropped; every later touch of its outbox raises `Killed`."""
        self.log("KILL")
        drop_ledger(self.ledger, self.executor)
        if self.task is not None:
            self.task.cancel()
        await asyncio.sleep(0)
        raise Killed("killed")

    def next_request(self, op: str) -> tuple[str | None, bool, bool]:
        step = self.step
        self.request_no += 1
        n = self.request_no
        if step is None or step.kind != "sale":
            return None, False, False
        fault = step.faults[n - 1] if n <= len(step.faults) else None
        k = self.op_no[op] = self.op_no.get(op, 0) + 1
        if fault is None:
            listed = step.by_op.get(op, [])
            fault = listed[k - 1] if k <= len(listed) else self.op_mode.get(op)
        if step.rotate_at_request == n:
            self.rotate_pending = True
        kill = step.kill_at_request == n and self.kills_in_step == 0
        return fault, kill and not step.kill_after_commit, kill and step.kill_after_commit

    async def in_process(self, coro: Any) -> Any:
        """Run one call of the kiosk as its process's task; a kill restarts the process."""
        self.task = self.loop.create_task(coro)
        try:
            return await self.task
        except (asyncio.CancelledError, Killed):
            if not self.executor.dead:
                raise
            self.kills += 1
            self.kills_in_step += 1
            self.log("restart from the outbox")
            self._open_process()
            return None
        finally:
            self.task = None

    # --- the steps ---------------------------------------------------------------------

    async def run(self) -> None:
        for step in self.story.steps:
            self.step = step
            self.request_no = 0
            self.op_no = {}
            self.op_mode = dict(step.op_mode)
            self.kills_in_step = 0
            self.log(f"step {step.describe()}")
            await getattr(self, f"_step_{step.kind}")(step)
            self.step = None
            await self.check()
        # the end of the day: the service answers again, the kiosk resolves what is left
        self.log("step end: no faults, recover, the owner settles")
        if self.rotate_pending:
            # a rotation armed for a request that a kill cut short happens now, before the
            # owner's last re-pairing (it fired on the first look-up after it: the day
            # ended on 401s, nobody re-paired; long run seed 502813)
            self.rotate_now()
        if self.rotated:  # the owner re-pairs the kiosk before the end of the day
            await self._step_repair(Step(-1, "repair"))
        await self.in_process(self.desk.recover(deadline_s=900.0, patient=True))
        await self._step_owner(Step(-1, "owner"))
        await self.in_process(self.desk.recover(deadline_s=900.0, patient=True))
        await self.check(final=True)

    async def _step_sale(self, step: Step) -> None:
        wallet = self.sandbox.create_wallet(1_000_000)
        record = SaleRecord(
            step.index, wallet.wallet_id, sales_sql.token_digest(wallet.qr_token), step.amount
        )
        self.sales[wallet.wallet_id] = record
        for action in step.prelude:
            await self._act(action, step, record)
        started = self.loop.vt
        if step.stranger_at_s is not None:
            self.loop.call_later(step.stranger_at_s, self._stranger_charge, step.amount)
        kill_timer = None
        if step.kill_after_s is not None:
            kill_timer = self.loop.call_later(step.kill_after_s, self._timed_kill)
        try:
            await self._sell(step, record, wallet.qr_token, started)
        finally:
            if kill_timer is not None:
                kill_timer.cancel()
        if record.intent_id is not None:
            for action in step.script:
                await self._act(action, step, record)

    async def _act(self, action: str, step: Step, record: SaleRecord) -> None:
        """One action of a sale's script (`Step.script`), its faults still armed."""
        self.log(f"then: {action}")
        if action == "clear the warning":
            if self.ledger.read(service_sql.uncleared_foreign):
                self.desk.clear_foreign_activity()
                self.log("the owner clears the other install's warning")
        elif action == "re-pair if needed":
            if self.rotated:
                await self._step_repair(Step(step.index, "repair"))
        elif action == "another install charges":
            self._stranger_charge(step.amount)
        elif action == "recover":  # `qrpos outbox resolve`: until nothing is left to watch
            await self.in_process(self.desk.recover(deadline_s=120.0, patient=True))
        elif action == "stall reverse":
            self.op_mode["reverse"] = "5xx_before"
        elif action == "refuse reverse":
            self.op_mode["reverse"] = "forbidden"
        elif action == "history answers":
            self.op_mode.pop("list", None)
        elif action == "heal":
            self.op_mode.clear()
        elif action == "reverse by hand":  # the owner, seeing the charge, refunds it
            for tx_id in self._kept_charges(record.wallet_id):
                await self.in_process(self.desk.reverse(tx_id, deadline_s=20.0))
        elif action == "owner refunds":
            await self._step_owner(Step(step.index, "owner", refund_instead=True))
        elif action == "owner":
            await self._step_owner(Step(step.index, "owner"))
        elif action == "x":
            await self._step_x(step)
        elif action == "z":
            await self._step_z(step)
        elif action.startswith("clock back "):  # NTP steps the kiosk's wall clock back
            self.clocks.kiosk_offset_s -= float(action.split()[-1])
        elif action == "re-pair another terminal":
            await self._step_repair(Step(step.index, "repair", other_terminal=True))
        else:
            raise ValueError(f"no such action: {action}")

    def _timed_kill(self) -> None:
        if self.task is None or self.kills_in_step:
            return
        self.log("KILL (timed)")
        drop_ledger(self.ledger, self.executor)
        self.task.cancel()

    async def _sell(self, step: Step, record: SaleRecord, token: str, started: float) -> None:
        if self.blocked():
            self.log("the kiosk cannot sell: an earlier sale is open or it needs re-pairing")
            return
        try:
            result = await self.in_process(
                self.desk.charge(step.amount, token, deadline_s=CLIENT_TIMEOUT_S * 3)
            )
        except ChargeRefusedLocally as exc:
            self.log(f"refused locally: {type(exc).__name__}")
            return
        intent = await self._intent_of(record)
        if intent is None:
            self.log("killed before the sale was stored")
            return
        record.intent_id = intent.id
        while True:
            row = await self._intent_of(record)
            assert row is not None
            if not row.is_open:
                break
            waited = self.loop.vt - started
            if step.abandon_after_s is not None and waited >= step.abandon_after_s:
                self.log(f"the cashier abandons sale {row.id}")
                await self.in_process(self.desk.abandon(row.id))
                break
            if waited >= PATIENCE_S:
                self.log(f"the cashier gives up waiting on sale {row.id} and abandons it")
                await self.in_process(self.desk.abandon(row.id))
                break
            result = await self.in_process(self.desk.resolve(row.id, deadline_s=5.0))
            if result is None:  # killed: the restarted kiosk recovers first
                await self.in_process(self.desk.recover(deadline_s=5.0))
            # the till drives an open sale again every `resolve_every_s` (qrpos.tui.sale):
            # a drive that returns at once (a sale held on a 401 until re-pairing sends
            # nothing) must not spin at one virtual instant, where patience never runs out
            await asyncio.sleep(RESOLVE_EVERY_S)
        row = await self._intent_of(record)
        assert row is not None
        self.log(f"sale {row.id} ends {row.state} charged={row.charged} tx={_short(row.tx_id)}")
        del result

    async def _intent_of(self, record: SaleRecord) -> IntentRow | None:
        # the sale's first intent with its token (the list's first match, without reading
        # every row of the day at every step)
        sql = "SELECT * FROM charge_intent WHERE token_sha256 = ? ORDER BY id LIMIT 1"
        rows = self.ledger.read(lambda c: c.execute(sql, (record.digest,)).fetchall())
        return intent_row(rows[0]) if rows else None

    def blocked(self) -> bool:
        rows = self.ledger.read(lambda c: sales_sql.list_intents(c, include_final=False))
        return any(r.is_open for r in rows)

    def _stranger_charge(self, amount: int) -> None:
        """The second install on the same credentials charges a stranger the same amount:
        on the terminal the kiosk is paired to now (after a re-pairing to another terminal,
        a charge on the first one is a row the kiosk's history never shows)."""
        wallet = self.sandbox.create_wallet(1_000_000)
        self.stranger_wallets.add(wallet.wallet_id)
        terminal = self._terminal(self.username)
        body = json.dumps({"qrToken": wallet.qr_token, "amountMNT": amount}).encode()
        key = f"other-{self.loop.vt:.3f}"
        reply = self.sandbox.charge(terminal, body, key)
        self.log(f"second install charges a stranger {amount} MNT: {reply.status}")

    def _terminal(self, username: str) -> Terminal:
        terminal = self.sandbox.terminal_record(username)
        assert terminal is not None
        return terminal

    async def _step_stranger(self, step: Step) -> None:
        self._stranger_charge(step.amount)

    async def _step_clock(self, step: Step) -> None:
        self.clocks.kiosk_offset_s = step.seconds
        self.service_offset_s = step.service_offset_s
        self.sandbox.set_clock_offset(step.service_offset_s)
        await self.in_process(self.desk.recover(deadline_s=5.0))

    def rotate_now(self) -> None:
        """The terminal's password is rotated at the service (401s until re-paired)."""
        self.rotate_pending = False
        self.sandbox.rotate_password(self.username)
        self.rotated = True
        self.log("the terminal's password is rotated")

    async def _step_repair(self, step: Step) -> None:
        if step.other_terminal:
            creds = self.sandbox.create_terminal()
            self.username, self.password = creds.username, creds.password
            self.usernames.append(creds.username)
        else:
            self.password = self.sandbox.rotate_password(self.username)
        self.rotated = False
        self.desk.replace_client(
            TerminalClient(
                "http://127.0.0.1:8080",
                self.username,
                self.password,
                timeout_s=CLIENT_TIMEOUT_S,
                transport=FaultyTransport(self),
            )
        )
        await self.in_process(self.desk.recover(deadline_s=60.0, patient=True))

    async def _step_x(self, step: Step) -> None:
        assert self.shift is not None
        figures = shifts.figures(self.ledger, self.shift.id)
        self.log(f"X: sales {figures.sales} not charged {figures.not_charged}")
        self._check_report(self.shift.id, figures.not_charged, None)

    async def _step_z(self, step: Step) -> None:
        assert self.shift is not None
        closed = shifts.take_z(self.ledger, self.shift, at=self.clocks.kiosk_now(), by="cashier")
        report = closed.z_report or {}
        number = int(report["z_number"])
        self.log(
            f"Z {number}: sales {report['sales']} not charged {report['not_charged']} "
            f"corrections {len(report['corrections'])}"
        )
        self._check_report(self.shift.id, int(report["not_charged"]), number)
        said = self.ledger.read(lambda c: _z_lines(c, number))
        for intent_id, money in said:
            record = self._record_of(int(intent_id))
            if (
                record is not None
                and money == "not_charged"
                and self._kept_charges(record.wallet_id)
            ):
                record.miscounted_in_z.append(number)
        corrected = {int(c["intent"]) for c in report["corrections"]}
        for record in self.sales.values():
            if record.intent_id in corrected:
                record.miscounted_in_z.clear()
        self.shift = shifts.open_shift(self.ledger, self.cashier, at=self.clocks.kiosk_now())

    async def _step_owner(self, step: Step) -> None:
        """The owner settles every open review by the truth of the service's books.

        A review whose true row another open review offers is refused with "settle that
        one first" (`error.review_held`): the owner, told so, settles the others and comes
        back to it. Only a pass that settles nothing while reviews are left is a break."""
        waiting: dict[int, str] = {}
        while True:
            settled_any = False
            waiting.clear()
            for view in self.ledger.read(reviews.open_reviews):
                intent_id = int(view.intent.id)
                record = self._record_of(intent_id)
                if record is None:
                    continue
                kept = self._kept_charges(record.wallet_id)
                decision: Any
                if not kept:
                    decision = MarkNotCharged()
                elif step.refund_instead:
                    decision = RefundRow(kept[0])
                else:
                    decision = MarkCharged(kept[0])
                self.log(f"owner settles sale {intent_id} ({view.reason}): {_decision(decision)}")
                try:
                    await self.in_process(
                        self.desk.settle_review(intent_id, decision, deadline_s=60.0)
                    )
                except ReviewRefused as exc:
                    said = f"sale {intent_id} ({view.reason}) refused {_decision(decision)}: {exc}"
                    key = None if exc.said is None else exc.said.key
                    if key == "error.review_history_unread" and self.rotated and step.index >= 0:
                        # the kiosk cannot read the history with a rotated password and says
                        # so, changing nothing; the owner leaves the review for the day's
                        # end, which re-pairs first (long run seed 513448: a rotation armed
                        # across a kill fired just before an owner's step)
                        self.log(f"owner cannot read the history now, leaves it: {exc}")
                        continue
                    if key != "error.review_held":
                        raise Broken("every review can be settled to the truth", said) from None
                    self.log(f"told to settle another review first: {exc}")
                    waiting[intent_id] = said
                    continue
                settled_any = True
            if not waiting:
                return
            if not settled_any:
                raise Broken(
                    "every review can be settled to the truth", next(iter(waiting.values()))
                )

    def _record_of(self, intent_id: int) -> SaleRecord | None:
        for record in self.sales.values():
            if record.intent_id == intent_id:
                return record
        return None

    # --- the books ---------------------------------------------------------------------

    def _ours(self, username: str | None) -> bool:
        return username in self.usernames

    def _kept_charges(self, wallet_id: str, txs: list[Any] | None = None) -> list[str]:
        return [
            tx.id
            for tx in (self.sandbox.transactions() if txs is None else txs)
            if tx.wallet_id == wallet_id
            and tx.type == spec.TxType.CHARGE
            and tx.status == spec.TxStatus.COMPLETED
        ]

    def _check_report(self, shift_id: int, not_charged: int, z: int | None) -> None:
        rows = self.ledger.read(lambda c: shifts_sql.shift_sales(c, shift_id))
        books_not_charged = 0
        txs = self.sandbox.transactions()
        for row in rows:
            record = self._by_digest(row.token_sha256)
            if record is None or not self._kept_charges(record.wallet_id, txs):
                books_not_charged += 1
        if not_charged > books_not_charged:
            raise Broken(
                "a settled X/Z equals the books",
                f"{f'Z {z}' if z else 'X'} counts {not_charged} not charged, "
                f"the books {books_not_charged}",
            )

    def _by_digest(self, digest: str | None) -> SaleRecord | None:
        for record in self.sales.values():
            if record.digest == digest:
                return record
        return None

    def _all_intents(self, conn: Any) -> list[IntentRow]:
        """Every intent, oldest first, as `sales_sql.list_intents` decodes them: a row whose
        stored values did not change since the last check is not decoded again (the checks
        read the whole day at every step; the till's own reads decode every time)."""
        rows = conn.execute("SELECT * FROM charge_intent ORDER BY id").fetchall()
        decoded: list[IntentRow] = []
        for raw in rows:
            held = tuple(raw)
            row = self._decoded.get(held)
            if row is None:
                row = self._decoded[held] = intent_row(raw)
            decoded.append(row)
        return decoded

    async def check(self, *, final: bool = False) -> None:
        """The invariants, against the sandbox's own books."""
        txs = self.sandbox.transactions()
        rows = self.ledger.read(self._all_intents)
        revs = self.ledger.read(lambda c: refunds_sql.list_reversals(c, include_final=True))
        open_revs = {
            r.tx_id for r in revs if r.state not in (ReversalState.REFUNDED, ReversalState.REFUSED)
        }
        by_id = {tx.id: tx for tx in txs}
        in_review = self.ledger.read(reviews.open_reviews)
        named = {c.transaction.id for v in in_review for c in v.candidates}
        reviewed = {int(v.intent.id) for v in in_review}
        for tx in txs:
            if tx.status == spec.TxStatus.REVERSED and tx.wallet_id in self.stranger_wallets:
                raise Broken(
                    "no refund of a row that is not the sale's own",
                    f"the kiosk refunded {_short(tx.id)}, a stranger's charge "
                    f"of {tx.amount_mnt} MNT",
                )
        if final:
            for rev in revs:
                if rev.state in (ReversalState.PENDING, ReversalState.CREDENTIALS_REJECTED):
                    # after half an hour of a service that answers: a refund's waits are
                    # its backoff's, counted in real seconds (never a stepped wall clock)
                    raise Broken(
                        "every refund ends while the service answers",
                        f"the refund of {_short(rev.tx_id)} is still {rev.state} at the end "
                        f"of the day after {rev.attempts} tries",
                    )
        for row in rows:
            record = self._by_digest(row.token_sha256)
            if record is None:
                continue
            kept = self._kept_charges(record.wallet_id, txs)
            settled = not row.is_open and row.state is not IntentState.NEEDS_REVIEW
            if row.state in CHARGED_STATES and row.tx_id is not None:
                paid = by_id.get(row.tx_id)
                if paid is None or paid.wallet_id != record.wallet_id:
                    raise Broken(
                        "a sale is paid only on its own charge",
                        f"sale {row.id} ({row.state}) paid on {_short(row.tx_id)}, "
                        f"{'unknown' if paid is None else 'another wallet'}'s charge",
                    )
            if settled and len(kept) > 1 and not open_revs:
                raise Broken(
                    "a wallet never charged twice for one sale",
                    f"sale {row.id} ({row.state}): {len(kept)} charges kept",
                )
            not_charged = settled and row.state not in CHARGED_STATES and row.tx_id is None
            if not_charged and kept and not row.watching:
                raise Broken(
                    "never 'not charged' while charged",
                    f"sale {row.id} ends {row.state} while {_short(kept[0])} is charged",
                )
            if final and kept:
                owned = (
                    row.tx_id in kept
                    or any(t in named for t in kept)
                    or bool(open_revs & set(kept))
                )
                if not owned and row.state not in CHARGED_STATES:
                    raise Broken(
                        "every charge owned by a sale or waiting in a review that names it",
                        f"{_short(kept[0])} of sale {row.id} ({row.state}) owned by nothing",
                    )
            if final and row.is_open:
                raise Broken(
                    "nothing left open without someone told",
                    f"sale {row.id} still {row.state} at the end of the day",
                )
            sold = row.state in SOLD_STATES and row.tx_id in kept
            told = row.state is IntentState.NEEDS_REVIEW and row.id in reviewed
            if final and kept and not sold and not told:
                # the customer's money is with the merchant and the sale is neither a sale
                # nor a person's question (a refund refused after an abandon, unseen)
                raise Broken(
                    "nothing left open without someone told",
                    f"{_short(kept[0])} of sale {row.id} ({row.state}) is kept, the sale "
                    "neither sold on it nor in a review",
                )
        if final:
            for record in self.sales.values():
                if record.miscounted_in_z and self._kept_charges(record.wallet_id, txs):
                    raise Broken(
                        "a settled X/Z equals the books",
                        f"sale {record.intent_id} counted not charged in Z "
                        f"{record.miscounted_in_z[0]}, kept charged, and no Z corrected it",
                    )


def _z_lines(conn: Any, number: int) -> list[Any]:
    """(sale, money) of each line Z `number` counted; none on an outbox from before Z lines
    (the code of before issue 47's fixes: then the Z's own count is all there is to check)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'z_line'").fetchall():
        return []
    return list(
        conn.execute("SELECT intent_id, money FROM z_line WHERE z_number = ?", (number,)).fetchall()
    )


def _short(tx_id: str | None) -> str:
    return "-" if tx_id is None else tx_id[:6] + "…" + tx_id[-4:]


def _decision(decision: Any) -> str:
    if isinstance(decision, MarkCharged):
        return f"charged {_short(decision.tx_id)}"
    if isinstance(decision, RefundRow):
        return f"refund {_short(decision.tx_id)}"
    return "not charged"


@dataclasses.dataclass
class Outcome:
    events: list[str]
    broken: Broken | None
    sales: int
    kills: int
    reviews: dict[str, int]


def run_story(story: Story) -> Outcome:
    """Play `story` on a fresh world: the event log and the first invariant broken."""
    loop = VirtualLoop()
    clocks = VirtualClocks(loop)
    rng = random.Random(f"{story.seed}:ids")
    with (
        tempfile.TemporaryDirectory(prefix="tillsim-", dir=_tmp_dir()) as tmp,
        patched_world(clocks, rng),
    ):
        world = World(story, Path(tmp), loop, clocks)
        broken: Broken | None = None
        try:
            loop.run_until_complete(world.run())
        except Broken as exc:
            broken = exc
            world.log(f"BROKEN {exc}")
        finally:
            reasons = _review_reasons(world)
            with contextlib.suppress(Exception):
                world.ledger.close()
            loop.close()
        return Outcome(
            world.events,
            broken,
            sum(1 for s in story.steps if s.kind == "sale"),
            world.kills,
            reasons,
        )


def _review_reasons(world: World) -> dict[str, int]:
    out: dict[str, int] = {}
    with contextlib.suppress(Exception):
        for (reason,) in world.ledger.read(
            lambda c: c.execute("SELECT reason FROM review").fetchall()
        ):
            out[str(reason)] = out.get(str(reason), 0) + 1
    return dict(sorted(out.items()))


def _tmp_dir() -> str | None:
    """Where a story's outbox lives: QRPOS_TILLSIM_TMP, else /dev/shm (no fsync costs),
    else the system's temporary folder. A long run names a tmpfs of its own: anything that
    empties /dev/shm on a shared machine ends every story in flight."""
    named = os.environ.get("QRPOS_TILLSIM_TMP")
    if named:
        return named
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() else None


# --- shrinking ----------------------------------------------------------------------------


def same_break(story: Story, invariant: str) -> bool:
    broken = run_story(story).broken
    return broken is not None and broken.invariant == invariant


def shrink(story: Story, invariant: str) -> Story:
    """Delta-debug a failing story: fewer steps, then fewer faults, while `invariant`
    still breaks."""
    steps = list(story.steps)
    chunk = max(1, len(steps) // 2)
    while chunk >= 1:
        i = 0
        while i < len(steps):
            trial = steps[:i] + steps[i + chunk :]
            if trial and same_break(Story(story.seed, trial, story.episodes), invariant):
                steps = trial
            else:
                i += chunk
        chunk //= 2
    for pos, step in enumerate(steps):
        for j in range(len(step.faults)):
            if step.faults[j] is None:
                continue
            lighter = dataclasses.replace(step, faults=list(step.faults))
            lighter.faults[j] = None
            trial = [*steps[:pos], lighter, *steps[pos + 1 :]]
            if same_break(Story(story.seed, trial, story.episodes), invariant):
                steps = trial
                step = lighter
        while step.faults and step.faults[-1] is None:
            step = dataclasses.replace(step, faults=step.faults[:-1])
            steps[pos] = step
    return Story(story.seed, steps, story.episodes)


def replay_command(story: Story, total_steps: int, mutant: str | None = None) -> str:
    """The command that replays `story` (a subset of seed's steps, faults lightened; under
    `mutant`, one of tests/tillsim/mutants/)."""
    keep = ",".join(str(s.index) for s in story.steps)
    drawn = {s.index: draw_step(story.seed, s.index, story.episodes) for s in story.steps}
    masks = []
    for s in story.steps:
        for j, fault in enumerate(drawn[s.index].faults):
            if fault is not None and (j >= len(s.faults) or s.faults[j] is None):
                masks.append(f"{s.index}:{j}")
    cmd = f"python benchmarks/till_sim.py --seed {story.seed} --steps {total_steps} --keep {keep}"
    if not story.episodes:
        cmd += " --plain"
    if mutant is not None:
        cmd += f" --mutant {mutant}"
    if masks:
        cmd += f" --no-fault {','.join(masks)}"
    return cmd


def story_from(
    seed: int,
    steps: int,
    keep: Sequence[int] | None,
    no_fault: Sequence[str],
    episodes: bool = True,
) -> Story:
    story = draw_story(seed, steps, episodes)
    if keep is not None:
        story.steps = [s for s in story.steps if s.index in set(keep)]
    for item in no_fault:
        index, j = (int(x) for x in item.split(":"))
        for s in story.steps:
            if s.index == index and j < len(s.faults):
                s.faults[j] = None
    return story


def printed(story: Story, outcome: Outcome, total_steps: int, mutant: str | None = None) -> str:
    lines = [f"seed {story.seed}: {outcome.broken}", "the story:"]
    lines += [f"  {s.describe()}" for s in story.steps]
    lines.append(f"replay: {replay_command(story, total_steps, mutant)}")
    return "\n".join(lines)
