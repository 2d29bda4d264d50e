"""The bounded fault campaign: random faults, service clock offsets, abandons followed by
same-amount sales, a second install on the same credentials, trickled replies, SIGKILLs,
refunds refused after an abandon, the wall clock stepped during a refund's backoff, a
sale whose later sends cannot get through and a re-pairing to another terminal mid-sale
never charge twice, lose a sale, say "not
charged" falsely, refund wrongly or without proof, leave a refund with nobody asked, or
hold the till past 45 s of the history showing the charge.

The judge itself is tested too: each kind of damage, staged in a real sandbox and a real
outbox, is counted (a judge that cannot count would let every campaign pass).
"""

from __future__ import annotations

import asyncio
import importlib.util
import random
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from qrpos.ledger import (
    ChargeDesk,
    IntentState,
    Ledger,
    ReversalState,
    refunds_sql,
    reviews_sql,
    sales_sql,
)
from qrpos.service import Approved, TerminalClient
from qrpos.simulator import Sandbox, SimulatorOptions, create_app, serve_in_thread
from qrpos.simulator.testing import asgi_transport

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


#: how long the slice's cashier waits for an answer (the full run waits 50 s)
SLICE_PATIENCE_S = 6.0
#: how long the slice's cashier waits for a sale whose sends cannot get through: just
#: past the 45 s target, so that one answered too late is seen, and no longer
SLICE_HELD_PATIENCE_S = 50.0


@pytest.fixture(scope="module")
def slice_figures(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One bounded campaign (20 sales, every scenario, kills, a re-pairing to another
    terminal at the fifth sale), shared by the tests below."""
    campaign = load("fault_campaign")
    workdir = tmp_path_factory.mktemp("campaign")
    figures = asyncio.run(
        campaign.campaign(
            20,
            kills=True,
            seed=7,
            workdir=workdir,
            patience_s=SLICE_PATIENCE_S,
            held_every=2,
            held_patience_s=SLICE_HELD_PATIENCE_S,
        )
    )
    print(figures.report())
    return figures


#: the tests of the slice share one campaign: on one xdist worker (--dist loadgroup), so
#: it runs once per run, not once per worker
ONE_CAMPAIGN = pytest.mark.xdist_group("fault_campaign_slice")


@ONE_CAMPAIGN
@pytest.mark.timeout(420)
def test_bounded_campaign_never_charges_twice_nor_refunds_or_claims_wrongly(
    slice_figures: Any,
) -> None:
    figures = slice_figures
    assert figures.kills >= 1 and sum(figures.faults.values()) >= 10
    # every fault kind of issue 10 ran and was timed
    kinds = set(figures.latencies)
    assert {"second_install", "abandon_then_same", "trickle", "outage"} <= kinds
    assert any(kind.startswith("clock ") for kind in kinds)
    assert any(kind.startswith("kiosk clock ") for kind in kinds)
    assert figures.second_install_sales >= 1 and figures.foreign_noticed
    assert figures.duplicates == 0
    assert figures.wrong_refunds == 0
    assert figures.misattributed == 0
    assert figures.phantom_approvals == 0
    assert figures.unowned == 0
    assert figures.unresolved_left == 0
    assert figures.reviews_without_truth == 0
    assert figures.crashes == 0, figures.report()
    assert figures.integrity == "ok"
    assert sum(figures.states.values()) >= figures.charges


@ONE_CAMPAIGN
@pytest.mark.timeout(420)
def test_bounded_campaign_a_sale_cut_off_by_a_repairing_goes_to_a_person_and_is_settled(
    slice_figures: Any,
) -> None:
    """Issue 47: the kiosk is re-paired to another terminal while a sale's reply is lost:
    the new terminal can neither resend its key nor read its row, so a person decides
    (`other_terminal`), and the owner names the charge from the old terminal's truth. The
    old terminal's charges still count as the kiosk's: nothing lost, nothing unowned."""
    figures = slice_figures
    assert figures.repairs["another terminal"] >= 1, figures.report()
    assert figures.review_reasons["other_terminal: repair"] >= 1, figures.report()
    assert figures.reviews_named >= 1 and figures.reviews_refused == 0, figures.report()
    assert figures.reviews_settled + figures.reviews_without_truth == figures.reviews
    assert figures.lost == 0 and figures.unowned == 0 and figures.duplicates == 0


@ONE_CAMPAIGN
@pytest.mark.timeout(420)
def test_bounded_campaign_says_not_charged_only_when_true_and_answers_in_time(
    slice_figures: Any,
) -> None:
    figures = slice_figures
    assert figures.false_not_charged == 0
    assert figures.lost == 0
    assert figures.slow_kinds() == []


@ONE_CAMPAIGN
@pytest.mark.timeout(420)
def test_bounded_campaign_every_refund_is_done_or_in_review_with_its_reason(
    slice_figures: Any,
) -> None:
    """Issue 41: refunds refused after an abandon, and refunds whose backoff met a step
    of the wall clock, ran; each refund landed on the service's proof or waits in a
    person's review, every review said why in words, and none was refunded unproven."""
    figures = slice_figures
    assert figures.faults["forbidden"] >= 1 and figures.refund_after_step
    assert figures.unproven_refunds == 0, figures.report()
    assert figures.refunds_stuck == 0, figures.report()
    assert figures.reviews_without_reason == 0, figures.report()
    assert figures.refund_refused_unsaid == 0, figures.report()
    assert figures.refunds_late() == [], figures.report()
    assert sum(figures.refunds.values()) >= 2, figures.report()


@ONE_CAMPAIGN
@pytest.mark.timeout(420)
@pytest.mark.xfail(
    strict=True,
    reason="issue 47 (h-fix24): a held sale's history match no longer answers 'charged' "
    "while its key is silent; the sale waits for its key, the cashier's abandon or the "
    "resend horizon, then a person decides: issue 41's 45 s target needs the lead's call",
)
def test_bounded_campaign_answers_a_sale_whose_sends_cannot_get_through_in_45_s(
    slice_figures: Any,
) -> None:
    """Issue 41: the charge endpoint answers nothing after the commit while the history
    answers: the cashier's answer comes within 45 s of the history showing the charge."""
    figures = slice_figures
    assert figures.held, figures.report()
    assert figures.held_too_long() == [], figures.report()


# --- the judge ----------------------------------------------------------------------------


@pytest.fixture
def judge_module() -> ModuleType:
    return load("campaign_judge")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Sandbox, str, TerminalClient, Ledger]]:
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    term = sandbox.create_terminal("m_demo")
    client = TerminalClient(
        "http://127.0.0.1",
        term.username,
        term.password,
        transport=asgi_transport(create_app(sandbox)),
    )
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    yield sandbox, term.username, client, ledger
    ledger.close()


async def _stage(
    world: tuple[Sandbox, str, TerminalClient, Ledger],
    judge_module: ModuleType,
    *,
    charges: int,
    reverse: bool = False,
    row: Callable[[list[str]], dict[str, Any]] | None,
    abandoned: bool = False,
    refund: ReversalState | None = None,
    review: str | None = None,
) -> Any:
    """One sale: `charges` real charges of its wallet, then its outbox row as staged, with
    a refund of its first charge in the state `refund` and a review for `review`."""
    sandbox, username, client, ledger = world
    wallet = sandbox.create_wallet(100_000)
    token = wallet.qr_token
    tx_ids: list[str] = []
    for _ in range(charges):
        outcome = await client.charge(
            sandbox.wallet(wallet.wallet_id).qr_token, 700, "k" + uuid.uuid4().hex
        )
        assert isinstance(outcome, Approved)
        tx_ids.append(outcome.transaction.id)
    if reverse:
        await client.reverse(tx_ids[0])
    if row is not None:
        changes = row(tx_ids)

        def store(conn: Any) -> None:
            new = sales_sql.insert_intent(
                conn, idem_key="k" + uuid.uuid4().hex, token=token, amount_mnt=700, now=0.0
            )
            via = changes.pop("via", None)  # a state the row passes through first
            if via is not None:
                sales_sql.update_intent(conn, new, state=via)
            sales_sql.update_intent(conn, new, **changes)
            if refund is not None:
                rid = refunds_sql.insert_reversal(
                    conn, tx_id=tx_ids[0], reason="abandoned", now=0.0, intent_id=new
                )
                refunds_sql.update_reversal(conn, rid, state=refund)
            if review is not None:
                reviews_sql.upsert_review(conn, new, review, "[]", 0.0)

        ledger.write(store)
    sale = judge_module.Sale(1, wallet.wallet_id, token, 700, "faults", abandoned=abandoned)
    figures = judge_module.Figures()
    judge_module.judge(sandbox, username, [sale], {1: ledger}, figures)
    await client.aclose()
    return figures


def _approved(tx_ids: list[str]) -> dict[str, Any]:
    return {"state": IntentState.APPROVED, "charged": 1, "tx_id": tx_ids[0], "in_flight": 0}


DAMAGE: dict[str, dict[str, Any]] = {
    "none": {"charges": 1, "row": _approved},
    "false_not_charged": {
        "charges": 1,
        "row": lambda ids: {"state": IntentState.NOT_CHARGED, "charged": 0, "in_flight": 0},
    },
    "wrong_refunds": {"charges": 1, "reverse": True, "row": _approved},
    "misattributed": {
        "charges": 1,
        "row": lambda ids: _approved(["tx_" + "0" * 20]),
    },
    "phantom_approvals": {"charges": 0, "row": lambda ids: _approved(["tx_" + "0" * 20])},
    "lost": {"charges": 1, "row": None},
    "duplicates": {"charges": 2, "row": _approved},
    "unresolved_left": {
        "charges": 0,
        "row": lambda ids: {"state": IntentState.UNRESOLVED, "in_flight": 0},
    },
}


@pytest.mark.parametrize("damage", list(DAMAGE))
async def test_the_judge_counts_each_kind_of_damage_from_the_sandbox(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType, damage: str
) -> None:
    figures = await _stage(world, judge_module, **DAMAGE[damage])
    counted = {name: getattr(figures, name) for name in DAMAGE if name != "none"}
    assert counted == {name: int(name == damage) for name in counted}


async def test_an_abandoned_sale_charged_and_never_refunded_is_lost(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    figures = await _stage(
        world,
        judge_module,
        charges=1,
        abandoned=True,
        row=lambda ids: {"state": IntentState.ABANDONED, "in_flight": 0, "watching": 0},
    )
    assert figures.lost == 1 and figures.wrong_refunds == 0


async def test_a_charge_no_sale_owns_is_counted(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    figures = await _stage(
        world, judge_module, charges=1, row=lambda ids: _approved(["tx_" + "0" * 20])
    )
    assert figures.misattributed == 1 and figures.unowned == 1 and not figures.ok


async def test_the_judge_counts_the_charges_of_every_terminal_the_kiosk_was_paired_to(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    """A sale charged under the first pairing is the kiosk's after a re-pairing: judged
    against the new terminal's charges alone it would read as paid by nobody."""
    sandbox, first, client, ledger = world
    wallet = sandbox.create_wallet(100_000)
    token = wallet.qr_token
    outcome = await client.charge(token, 700, "k" + uuid.uuid4().hex)
    await client.aclose()
    assert isinstance(outcome, Approved)
    tx_id = outcome.transaction.id

    def store(conn: Any) -> None:
        new = sales_sql.insert_intent(
            conn, idem_key="k" + uuid.uuid4().hex, token=token, amount_mnt=700, now=0.0
        )
        sales_sql.update_intent(conn, new, **_approved([tx_id]))

    ledger.write(store)
    now = sandbox.create_terminal("m_demo").username  # the kiosk is re-paired
    sale = judge_module.Sale(1, wallet.wallet_id, token, 700, "repair")
    every, latest = judge_module.Figures(), judge_module.Figures()
    judge_module.judge(sandbox, [first, now], [sale], {1: ledger}, every)
    judge_module.judge(sandbox, now, [sale], {1: ledger}, latest)
    damage = ("duplicates", "lost", "misattributed", "phantom_approvals", "unowned")
    assert {d: getattr(every, d) for d in damage} == dict.fromkeys(damage, 0)
    assert latest.phantom_approvals == 1


def test_a_kind_whose_p95_misses_the_target_fails_the_run(judge_module: ModuleType) -> None:
    figures = judge_module.Figures(integrity="ok")
    figures.latencies["trickle"] = [1.0] * 19 + [50.0]
    assert figures.ok  # p95 of 20 values is the 19th
    figures.latencies["clock +10 min"] = [1.0] * 18 + [50.0, float("inf")]
    assert not figures.ok and figures.slow_kinds() == ["clock +10 min"]


def _abandoned_charged(tx_ids: list[str]) -> dict[str, Any]:
    return {
        "state": IntentState.ABANDONED,
        "charged": 1,
        "tx_id": tx_ids[0],
        "in_flight": 0,
        "watching": 0,
    }


async def test_a_refused_refund_nobody_was_asked_about_is_stuck(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    """Issue 41's defect: abandoned, proven charged, refund refused, no review."""
    figures = await _stage(
        world,
        judge_module,
        charges=1,
        abandoned=True,
        row=_abandoned_charged,
        refund=ReversalState.REFUSED,
    )
    assert figures.refunds_stuck == 1 and figures.lost == 1 and not figures.ok
    assert figures.refunds == {"refused, no review": 1}


async def test_a_refund_still_queued_at_the_end_is_stuck(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    figures = await _stage(
        world,
        judge_module,
        charges=1,
        abandoned=True,
        row=_abandoned_charged,
        refund=ReversalState.PENDING,
    )
    assert figures.refunds_stuck == 1 and not figures.ok


async def test_a_refused_refund_waiting_in_review_with_a_reason_is_not_stuck(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    figures = await _stage(
        world,
        judge_module,
        charges=1,
        abandoned=True,
        row=lambda ids: {**_abandoned_charged(ids), "state": IntentState.NEEDS_REVIEW},
        refund=ReversalState.REFUSED,
        review="reversed_row",
    )
    assert figures.refunds_stuck == 0 and figures.lost == 0
    assert figures.reviews_without_reason == 0
    assert figures.refunds == {"refused, in review: reversed_row": 1}


async def test_a_review_whose_reason_has_no_words_is_counted(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    figures = await _stage(
        world,
        judge_module,
        charges=1,
        row=lambda ids: {**_abandoned_charged(ids), "state": IntentState.NEEDS_REVIEW},
        review="no_such_reason",
    )
    assert figures.reviews_without_reason == 1 and not figures.ok


async def test_a_sale_called_refunded_whose_charge_stands_is_refunded_without_proof(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    figures = await _stage(
        world,
        judge_module,
        charges=1,
        abandoned=True,
        row=lambda ids: {
            **_abandoned_charged(ids),
            "via": IntentState.ABANDONED,
            "state": IntentState.REVERSED_AFTER_ABANDON,
        },
        refund=ReversalState.REFUNDED,
    )
    assert figures.unproven_refunds == 1 and not figures.ok
    assert figures.refunds_stuck == 0


async def test_a_refund_proven_by_the_service_is_done(
    world: tuple[Sandbox, str, TerminalClient, Ledger], judge_module: ModuleType
) -> None:
    figures = await _stage(
        world,
        judge_module,
        charges=1,
        reverse=True,
        abandoned=True,
        row=lambda ids: {
            **_abandoned_charged(ids),
            "via": IntentState.ABANDONED,
            "state": IntentState.REVERSED_AFTER_ABANDON,
        },
        refund=ReversalState.REFUNDED,
    )
    assert figures.unproven_refunds == 0 and figures.refunds_stuck == 0 and figures.lost == 0
    assert figures.refunds == {"refunded": 1}


def test_a_held_sale_or_a_late_refund_past_its_target_fails_the_run(
    judge_module: ModuleType,
) -> None:
    figures = judge_module.Figures(integrity="ok")
    figures.held = [3.0, 44.9]
    figures.refund_after_step = [0.2, 29.0]
    assert figures.ok
    figures.held.append(75.5)
    assert not figures.ok and figures.held_too_long() == [75.5]
    figures.held.pop()
    figures.refund_after_step.append(float("inf"))
    assert not figures.ok and figures.refunds_late() == [float("inf")]
    figures.refund_after_step.pop()
    figures.crashes = 1  # the ledger raised mid-sale
    assert not figures.ok


# --- the refund after a clock step: what the figure times ---------------------------------


@pytest.mark.timeout(90)
@pytest.mark.parametrize("stranger", [False, True], ids=["alone", "another_install_sold"])
async def test_a_refund_clock_step_sale_is_timed_only_when_its_refund_met_the_step(
    tmp_path: Path, stranger: bool
) -> None:
    """The campaign's "refund after a clock step" times a refund that met 500s while the
    kiosk's clock was hours ahead, from the service taking refunds again. Alone, the refund
    is in backoff when NTP steps the clock back, and lands at once. When another install
    has just sold the same amount, the abandoned sale's row is not its own in every
    pairing: the sale goes to a person's review (foreign_activity), and no refund of the
    kiosk's own goes out. The owner then refunds it from the review, as a person would,
    and that refund is the one that meets the step (before, the scenario timed the
    owner's refund at the end of a run: 820 s median in a 30-minute run). A sale with no
    refund before the step at all is counted apart (`refund_step_missed`), not timed."""
    campaign = load("fault_campaign")
    world = sys.modules["campaign_world"]
    sandbox = world.CampaignSandbox(SimulatorOptions(rate_limit_enabled=False))
    term = sandbox.create_terminal("m_demo")
    amount = 4500
    with (
        serve_in_thread(create_app(sandbox)) as url,
        serve_in_thread(world.FaultlessDoor(create_app(sandbox))) as url2,
    ):
        ledger = Ledger.open(tmp_path / "outbox.sqlite3")
        client = TerminalClient(url, term.username, term.password, timeout_s=0.5)
        other = TerminalClient(url2, term.username, term.password, timeout_s=0.5)
        try:
            run = campaign.Run(
                random.Random(4102), sandbox, term.username, None, None, {}, campaign.Figures()
            )
            run.desk = ChargeDesk(ledger, client, policy=campaign.POLICY, clock=run.kiosk_clock)
            run.next_amount = lambda: amount
            if stranger:
                wallet = sandbox.create_wallet(100_000)
                sold = await other.charge(wallet.qr_token, amount, "other-" + uuid.uuid4().hex)
                assert isinstance(sold, Approved)
            await campaign.scenario_refund_clock_step(run)
            (sale,) = run.sales
            campaign.judge(sandbox, term.username, run.sales, {1: ledger}, run.figures)
        finally:
            await client.aclose()
            await other.aclose()
            ledger.close()
    figures = run.figures
    if stranger:
        assert "the owner refunded it from its review" in sale.kinds, sale.kinds
        assert sale.refund_step_missed is None
        assert len(figures.refund_after_step) == 1
        assert figures.refund_after_step[0] <= sys.modules["campaign_judge"].REFUND_DUE_S
        assert not figures.refunds_late() and not figures.refund_step_missed
    else:
        assert sale.refund_step_missed is None
        assert len(figures.refund_after_step) == 1
        assert figures.refund_after_step[0] <= sys.modules["campaign_judge"].REFUND_DUE_S
        assert not figures.refunds_late() and not figures.refund_step_missed
