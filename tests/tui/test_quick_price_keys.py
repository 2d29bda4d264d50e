"""Quick prices (F3..F11) and the repeat key (F12) on the real app against the sandbox:
one key charges the owner's price or the last amount; a key with nothing behind it, or
one that would throw away digits already keyed, is refused on screen; at full speed, on
the last result, they start the next sale like a digit does."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kiosk_harness import FAST, Kiosk, make_services
from test_full_speed_queue import burst, charged_amounts, pay

from qrpos.quick_prices import set_price
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp


@pytest.fixture
async def priced(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> AsyncIterator[Kiosk]:
    """The kiosk of a canteen whose owner set up two prices before it started."""
    set_price(tmp_path, 1, 4500, "Set A")
    set_price(tmp_path, 3, 12000, "Buuz")
    services, ledger = make_services(tmp_path, live_url, terminal)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        yield Kiosk(app, pilot, services, sandbox, terminal, ledger)
    ledger.close()


async def test_the_amount_screen_lists_the_prices_and_one_key_charges_one(priced: Kiosk) -> None:
    await priced.on_screen("AmountScreen")
    listed = priced.text("#prices").replace("\xa0", " ")
    assert "F3 Set A 4,500 ₮" in listed and "F5 Buuz 12,000 ₮" in listed
    await priced.pilot.press("f5")
    await pay(priced, 12000)
    assert await charged_amounts(priced, 1) == [12000]


async def test_the_repeat_key_charges_the_last_amount_again(priced: Kiosk) -> None:
    await priced.key_amount("2300")
    await pay(priced, 2300)
    await priced.pilot.press("enter")  # ends the result
    await priced.on_screen("AmountScreen")
    assert "F12 again 2,300 ₮" in priced.text("#prices").replace("\xa0", " ")
    await priced.pilot.press("f12")
    await pay(priced, 2300)
    assert await charged_amounts(priced, 2) == [2300, 2300]


async def test_a_key_with_nothing_behind_it_is_refused_on_screen(priced: Kiosk) -> None:
    await priced.on_screen("AmountScreen")
    await priced.pilot.press("f4")
    await priced.until(lambda: "No price is set up on F4" in priced.text("#notice"))
    await priced.pilot.press("f12")
    await priced.until(lambda: "No amount to repeat" in priced.text("#notice"))
    assert type(priced.app.screen).__name__ == "AmountScreen"
    assert priced.sandbox.transactions() == []


async def test_a_price_key_never_throws_away_digits_already_keyed(priced: Kiosk) -> None:
    """`7 F3` is not 4,500 and not 7: the cashier is asked to clear the 7 first."""
    await priced.on_screen("AmountScreen")
    await priced.pilot.press("7", "f3")
    await priced.until(lambda: "Clear the amount keyed first" in priced.text("#notice"))
    assert priced.app.screen.amount == 7  # type: ignore[attr-defined]
    await priced.pilot.press("slash", "f3")
    await pay(priced, 4500)
    assert await charged_amounts(priced, 1) == [4500]


async def test_at_full_speed_a_price_or_repeat_key_on_the_result_starts_the_next_sale(
    priced: Kiosk,
) -> None:
    await priced.key_amount("800")
    await pay(priced, 800)
    burst(priced, ["f3"])
    await pay(priced, 4500)
    burst(priced, ["f12"])
    await pay(priced, 4500)
    burst(priced, ["5", "f3", "backspace", "f5"])  # refused over the 5, then taken
    await pay(priced, 12000)
    assert await charged_amounts(priced, 4) == [800, 4500, 4500, 12000]


async def test_prices_changed_while_the_kiosk_runs_reach_the_next_amount_screen(
    priced: Kiosk, tmp_path: Path
) -> None:
    await priced.on_screen("AmountScreen")
    set_price(tmp_path, 1, 5000, "Set A")  # `qrpos prices set 1 5000` from a shell
    await priced.pilot.press("f2")
    await priced.on_screen("OwnerMenuScreen")
    await priced.pilot.press("escape")
    await priced.on_screen("AmountScreen")
    await priced.until(lambda: "F3 Set A 5,000 ₮" in priced.text("#prices").replace("\xa0", " "))
    await priced.pilot.press("f3")
    await pay(priced, 5000)
    assert await charged_amounts(priced, 1) == [5000]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
async def test_a_whole_lunch_queue_at_full_speed_charges_what_was_asked_for(
    priced: Kiosk, seed: int
) -> None:
    """The class of the bug, not one reproduction: random queues of typed amounts (with a
    slip corrected), quick-price keys, the repeat key, an amount over the limit (refused
    where it shows) and a sale cancelled on the card screen, every burst typed with no
    pause on whatever screen the last one left. The sandbox's charges are exactly the
    sales the cashier asked for, in order."""
    rng = random.Random(seed)
    prices = {"f3": 4500, "f5": 12000}
    expected: list[int] = []
    last: int | None = None
    on_result = False
    await priced.on_screen("AmountScreen")
    for _ in range(8):
        step = rng.choice(["amount", "price", "repeat", "refused", "cancel"])
        if step == "repeat" and last is None:
            step = "price"
        lead = [] if on_result else ["delete"]  # the amount screen: clear what was left
        if step in ("amount", "cancel"):
            amount = rng.randint(1, 999_999)
            keys = list(str(amount))
            if rng.random() < 0.5:
                keys = [*keys, str(rng.randint(0, 9)), "backspace"]
            burst(priced, [*lead, *keys, "enter"])
        elif step == "price":
            key = rng.choice(sorted(prices))
            amount = prices[key]
            burst(priced, [*lead, key])
        elif step == "repeat":
            assert last is not None
            amount = last
            burst(priced, [*lead, "f12"])
        else:
            burst(priced, [*lead, *"2000000", "enter"])
            await priced.on_screen("AmountScreen")
            await priced.until(lambda: "at most" in priced.text("#notice"))
            on_result = False
            continue
        await priced.on_screen("PresentCardScreen")
        assert priced.app.sale.amount == amount
        last = amount
        if step == "cancel":
            burst(priced, ["escape"])
            await priced.on_screen("AmountScreen")
            on_result = False
            continue
        await pay(priced, amount)
        expected.append(amount)
        on_result = True
    assert await charged_amounts(priced, len(expected)) == expected
