"""A phone left in view is not charged for the next sale: a code in view since before the
last sale ended must leave the view, or the cashier confirms it on screen.

The scan loop's rule is checked on its own with a fake clock (every interleaving of
"in view", "gone" and "sale ended" that matters), then end to end: the demo's virtual
phone (real frames, the real decoder) in front of the real app, driven by Pilot, against
the sandbox; the test reads the messages the app posts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from kiosk_harness import Kiosk, demo_kiosk
from textual.message import Message

from qrpos.kiosk.demo import SandboxDemo
from qrpos.ledger import IntentState
from qrpos.scanner import RefusalCode, ScanEvent, ScanLoop, ScanRefused, TokenRead, make_decoder
from qrpos.scanner.frames import Frame
from qrpos.tui.messages import HeldCardAccepted, ScanRefusedMessage
from qrpos.tui.sale import Sale, SaleState

OLD = b"vqr_customerA_token_1"
FRESH = b"vqr_customerA_token_2"  # the same phone's pass, refreshed after the charge
OTHER = b"vqr_customerB_token_1"


class NoFrames:
    """The loop is fed codes directly (`handle_codes`); it never reads a frame."""

    name = "none"

    def open(self) -> None: ...

    def read(self) -> Frame | None:
        return None

    def close(self) -> None: ...


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _loop() -> tuple[ScanLoop, list[ScanEvent], Clock]:
    events: list[ScanEvent] = []
    clock = Clock()
    loop = ScanLoop(NoFrames(), make_decoder(), events.append, gone_after_s=0.8, clock=clock)
    return loop, events, clock


def _read(events: list[ScanEvent]) -> list[str]:
    return [e.token for e in events if isinstance(e, TokenRead)]


def test_a_refreshed_pass_left_in_view_is_held_until_it_leaves() -> None:
    loop, events, clock = _loop()
    loop.arm(allow_repeat=True)
    loop.handle_codes([OLD])
    assert _read(events) == [OLD.decode()]
    clock.now += 2.0
    loop.handle_codes([FRESH])  # still in view while the sale is charged
    loop.mark_sale_ended()
    clock.now += 0.3
    loop.handle_codes([FRESH])
    loop.arm(allow_repeat=True)  # the next sale
    clock.now += 0.3
    loop.handle_codes([FRESH])
    assert _read(events) == [OLD.decode()]
    [held] = [e for e in events if isinstance(e, ScanRefused)]
    assert held.code is RefusalCode.HELD
    clock.now += 1.0  # the phone has left the view: frames without it
    for _ in range(3):
        loop.handle_codes([])
        clock.now += 0.05
    loop.handle_codes([FRESH])
    assert _read(events) == [OLD.decode(), FRESH.decode()]


def test_the_cashier_may_accept_the_card_in_view() -> None:
    loop, events, clock = _loop()
    loop.handle_codes([FRESH])
    loop.mark_sale_ended()
    loop.arm(allow_repeat=True)
    clock.now += 0.1
    loop.handle_codes([FRESH])
    assert _read(events) == []
    loop.accept_held()
    loop.handle_codes([FRESH])
    assert _read(events) == [FRESH.decode()]


def test_a_spent_token_still_in_view_is_refused_and_cannot_be_accepted() -> None:
    """The phone stays in view but its pass has not refreshed yet: it still shows the token
    that just paid. The service retires a token at its first charge, so handing it over
    again could only end in "already used"; the cashier's confirmation does not change it."""
    loop, events, clock = _loop()
    loop.arm(allow_repeat=True)
    loop.handle_codes([OLD])
    loop.mark_sale_ended(charged=True)
    loop.arm(allow_repeat=True)  # the next sale, at once
    for _ in range(3):
        clock.now += 0.1
        loop.handle_codes([OLD])
        loop.accept_held()
    # it leaves the view and comes back: still spent
    clock.now += 2.0
    for _ in range(3):
        loop.handle_codes([])
    clock.now += 5.0
    loop.handle_codes([OLD])
    assert _read(events) == [OLD.decode()]
    refusals = [e.code for e in events if isinstance(e, ScanRefused)]
    assert set(refusals) == {RefusalCode.SPENT}
    # the pass refreshes while in view: the held-card question, then the fresh token
    loop.handle_codes([FRESH])
    assert [e.code for e in events if isinstance(e, ScanRefused)][-1] is RefusalCode.SPENT
    clock.now += 1.0
    loop.handle_codes([FRESH])
    loop.accept_held()
    loop.handle_codes([FRESH])
    assert _read(events) == [OLD.decode(), FRESH.decode()]


def test_a_declined_sales_card_may_pay_for_the_next_sale() -> None:
    """A decline retires nothing: the customer may show the same pass again (a smaller
    amount, a topped-up wallet) once it has left the view or the cashier confirms it."""
    loop, events, clock = _loop()
    loop.arm(allow_repeat=True)
    loop.handle_codes([OLD])
    loop.mark_sale_ended(charged=False)
    loop.arm(allow_repeat=True)
    clock.now += 0.1
    loop.handle_codes([OLD])
    loop.accept_held()
    loop.handle_codes([OLD])
    assert _read(events) == [OLD.decode(), OLD.decode()]


def stories(then: st.SearchStrategy[Any], size: int) -> st.SearchStrategy[list[Any]]:
    """Steps of a story: a decoded frame's code (or none) after a gap in seconds, then
    what happens (`then`); a code has left the view after 0.8 s and three frames without."""
    codes = st.sampled_from([None, OLD, FRESH, OTHER])
    gaps = st.floats(min_value=0.01, max_value=2.0)
    return st.lists(st.tuples(codes, gaps, then), max_size=size)


# what the cashier or the sale does after each frame
actions = stories(st.sampled_from(["", "charged", "declined", "accept"]), 30)


@given(actions)
def test_no_token_that_paid_is_ever_handed_over_again(
    story: list[tuple[bytes | None, float, str]],
) -> None:
    loop, events, clock = _loop()
    loop.arm(allow_repeat=True)
    spent: set[str] = set()
    sale_token: str | None = None
    for code, gap, action in story:
        clock.now += gap
        before = len(_read(events))
        loop.handle_codes([code] if code else [])
        if len(_read(events)) > before:
            sale_token = _read(events)[-1]
            assert sale_token not in spent
        if action == "accept":
            loop.accept_held()
        elif action:
            loop.mark_sale_ended(charged=action == "charged")
            if action == "charged" and sale_token is not None:
                spent.add(sale_token)
            sale_token = None
            loop.arm(allow_repeat=True)


# after each frame, maybe a sale ends
steps = stories(st.booleans(), 25)


@given(steps)
def test_no_code_continuously_in_view_since_a_sale_ended_is_ever_handed_over(
    story: list[tuple[bytes | None, float, bool]],
) -> None:
    loop, events, clock = _loop()
    loop.arm(allow_repeat=True)
    streak_start: float | None = None
    last_seen: float | None = None
    ended: float | None = None
    absent = 0  # decoded frames in a row without a code
    for code, gap, sale_ends in story:
        clock.now += gap
        before = len(_read(events))
        loop.handle_codes([code] if code else [])
        if code:
            gone = last_seen is None or (clock.now - last_seen > 0.8 and absent >= 3)
            streak_start = clock.now if gone else streak_start
            last_seen = clock.now
            absent = 0
        else:
            absent += 1
        if len(_read(events)) > before:
            # handed over: the code's streak began after the last sale ended
            assert ended is None or (streak_start is not None and streak_start > ended)
            loop.arm(allow_repeat=True)
        if sale_ends:
            loop.mark_sale_ended()
            ended = clock.now


async def _sale_moves(kiosk: Kiosk, posted: list[Message], state: SaleState, count: int) -> None:
    await kiosk.until(
        lambda: len([m for m in posted if isinstance(m, Sale.Moved) and m.state is state]) >= count,
        timeout=15,
    )


async def _refused(kiosk: Kiosk, posted: list[Message], code: RefusalCode) -> None:
    await kiosk.until(
        lambda: any(isinstance(m, ScanRefusedMessage) and m.code == code for m in posted),
        timeout=15,
    )


async def test_the_phone_left_in_view_is_not_charged_for_the_next_sale(tmp_path: Path) -> None:
    posted: list[Message] = []
    async with demo_kiosk(tmp_path, "en", posted) as (kiosk, world):
        app, pilot = kiosk.app, kiosk.pilot
        first = world.wallet_ids[0]
        await kiosk.key_amount("12500")
        await kiosk.on_screen("PresentCardScreen")
        # customer #1 pays and leaves the phone on the counter: its pass refreshes
        await pilot.press("h", "p")
        await _sale_moves(kiosk, posted, SaleState.RESULT, 1)
        assert world.sandbox.wallet(first).balance_mnt == 250_000 - 12_500
        fresh = world.sandbox.wallet(first).qr_token
        demo: SandboxDemo = world.services.demo  # type: ignore[assignment]
        await kiosk.until(lambda: demo.shown == fresh)
        await kiosk.on_screen("ResultScreen")
        await pilot.press("x")
        # the next sale: the phone still in view must not pay for it
        await kiosk.key_amount("5000")
        await _refused(kiosk, posted, RefusalCode.HELD)
        assert world.sandbox.wallet(first).balance_mnt == 250_000 - 12_500
        assert app.sale.state is SaleState.PRESENTING
        assert "before the last sale ended" in kiosk.text("#scan-status")
        # the cashier confirms on screen: now it is charged, once
        await pilot.press("enter")
        await _sale_moves(kiosk, posted, SaleState.RESULT, 2)
        assert any(isinstance(m, HeldCardAccepted) for m in posted)
        assert world.sandbox.wallet(first).balance_mnt == 250_000 - 12_500 - 5_000


async def test_a_pass_not_yet_refreshed_is_not_charged_and_the_refreshed_one_is(
    tmp_path: Path,
) -> None:
    """The cashier starts the next sale before the phone left in view shows its new token:
    the spent one is refused (not offered for confirmation), the refreshed one is asked
    about, and only the cashier's Enter charges it, once."""
    posted: list[Message] = []
    async with demo_kiosk(tmp_path, "en", posted) as (kiosk, world):
        app, pilot = kiosk.app, kiosk.pilot
        first = world.wallet_ids[0]
        demo: SandboxDemo = world.services.demo  # type: ignore[assignment]
        demo.refresh_after_s = 60.0  # this wallet app is slow to notice the payment
        await kiosk.key_amount("12500")
        await kiosk.on_screen("PresentCardScreen")
        spent = world.sandbox.wallet(first).qr_token
        await pilot.press("h", "p")
        await _sale_moves(kiosk, posted, SaleState.RESULT, 1)
        await kiosk.on_screen("ResultScreen")
        await pilot.press("x")
        await kiosk.key_amount("5000")
        await _refused(kiosk, posted, RefusalCode.SPENT)
        assert demo.shown == spent
        assert "just taken with this code" in kiosk.text("#scan-status")
        await pilot.press("enter")  # nothing to confirm: the spent code is not charged
        await pilot.pause(0.5)
        assert app.sale.state is SaleState.PRESENTING
        assert not any(isinstance(m, HeldCardAccepted) for m in posted)
        # the pass refreshes: now the held-card question, and Enter charges the new token
        demo._show(world.sandbox.wallet(first).qr_token)
        await _refused(kiosk, posted, RefusalCode.HELD)
        await pilot.press("enter")
        await _sale_moves(kiosk, posted, SaleState.RESULT, 2)
        assert world.sandbox.wallet(first).balance_mnt == 250_000 - 12_500 - 5_000
        results = [m.result for m in posted if isinstance(m, Sale.Moved) and m.result]
        assert [r.state for r in results] == [IntentState.APPROVED, IntentState.APPROVED]


async def test_a_new_phone_after_the_old_one_left_is_charged_without_asking(
    tmp_path: Path,
) -> None:
    posted: list[Message] = []
    async with demo_kiosk(tmp_path, "en", posted) as (kiosk, world):
        pilot = kiosk.pilot
        await kiosk.key_amount("700")
        await kiosk.on_screen("PresentCardScreen")
        await pilot.press("h", "p")
        await _sale_moves(kiosk, posted, SaleState.RESULT, 1)
        await kiosk.on_screen("ResultScreen")
        await pilot.press("x")
        await kiosk.key_amount("800")
        await kiosk.on_screen("PresentCardScreen")
        # customer #2: the old phone goes, the new one comes (the demo leaves a gap)
        await pilot.press("p")
        await _sale_moves(kiosk, posted, SaleState.RESULT, 2)
        second = world.sandbox.wallet(world.wallet_ids[1])
        assert second.balance_mnt == 120_000 - 800
        # customer #1 paid once; nobody had to confirm anything on screen
        assert world.sandbox.wallet(world.wallet_ids[0]).balance_mnt == 250_000 - 700
        assert not any(isinstance(m, HeldCardAccepted) for m in posted)
