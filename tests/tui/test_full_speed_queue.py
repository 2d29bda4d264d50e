"""A lunch queue typed at full speed: the cashier keys the next amount while the last
result is still on screen, with no pause between keys. Every key lands where it was meant
(the amount charged is always the amount typed), on the real app against the sandbox."""

from __future__ import annotations

import random

import pytest
from kiosk_harness import Kiosk
from textual import events

from qrpos.tui.messages import TokenScanned

#: Textual's key names for the keys a cashier types
KEY_NAMES = {"enter": "\r", "backspace": "\x7f", "escape": "\x1b", "tab": "\t"}


def burst(kiosk: Kiosk, keys: list[str]) -> None:
    """Queue every key at once: none waits for a screen to be drawn (full speed)."""
    for key in keys:
        kiosk.app.post_message(events.Key(key, KEY_NAMES.get(key, key)))


async def charged_amounts(kiosk: Kiosk, count: int) -> list[int]:
    await kiosk.until(lambda: len(kiosk.sandbox.transactions()) >= count)
    return [tx.amount_mnt for tx in kiosk.sandbox.transactions()]


async def pay(kiosk: Kiosk, amount: int) -> None:
    """The card screen asks for `amount`: the customer shows a fresh pass."""
    await kiosk.on_screen("PresentCardScreen")
    assert kiosk.app.sale.amount == amount
    wallet = kiosk.sandbox.create_wallet(1_000_000)
    kiosk.app.post_message(TokenScanned(wallet.qr_token))
    await kiosk.on_screen("ResultScreen")


async def test_the_next_amount_typed_on_the_result_is_charged_whole(kiosk: Kiosk) -> None:
    """`4 5 0 0 Enter` on the result of the last sale charges 4,500, not 500."""
    await kiosk.key_amount("2500")
    await pay(kiosk, 2500)
    burst(kiosk, ["4", "5", "0", "0", "enter"])
    await pay(kiosk, 4500)
    assert await charged_amounts(kiosk, 2) == [2500, 4500]


async def test_a_queue_at_full_speed_charges_exactly_what_was_typed(kiosk: Kiosk) -> None:
    """Random queues of amounts, corrections (backspace) and a mistyped digit cleared,
    each typed in one burst on the previous result."""
    rng = random.Random(2026)
    typed: list[int] = []
    await kiosk.key_amount("100")
    await pay(kiosk, 100)
    typed.append(100)
    for _ in range(6):
        amount = rng.randint(1, 999_999)
        keys = list(str(amount))
        if rng.random() < 0.5:
            keys = [*keys, str(rng.randint(0, 9)), "backspace"]  # a slip, corrected
        burst(kiosk, [*keys, "enter"])
        await pay(kiosk, amount)
        typed.append(amount)
    assert await charged_amounts(kiosk, len(typed)) == typed


async def test_enter_on_the_result_only_ends_it(kiosk: Kiosk) -> None:
    """Enter (or another key that is not a digit) ends the result and starts nothing:
    the next amount is typed from empty."""
    await kiosk.key_amount("700")
    await pay(kiosk, 700)
    burst(kiosk, ["enter", "3", "0", "0", "enter"])
    await pay(kiosk, 300)
    assert await charged_amounts(kiosk, 2) == [700, 300]


async def test_a_refused_amount_typed_at_full_speed_is_refused_visibly(kiosk: Kiosk) -> None:
    """An amount over the limit, typed on the result, lands on the amount screen and is
    refused there with the reason: nothing sent, nothing silently dropped."""
    await kiosk.key_amount("900")
    await pay(kiosk, 900)
    burst(kiosk, [*"2000000", "enter"])
    await kiosk.on_screen("AmountScreen")
    await kiosk.until(lambda: "at most" in kiosk.text("#notice"))
    assert kiosk.app.screen.amount == 2_000_000  # type: ignore[attr-defined]
    assert await charged_amounts(kiosk, 1) == [900]


async def test_a_digit_typed_on_the_card_screen_is_refused_where_it_shows(kiosk: Kiosk) -> None:
    """The amount is set once the card screen is up: a digit typed there (the cashier
    started the next amount too early) is refused on the hint line, never dropped unseen,
    and the sale charges the amount on screen."""
    await kiosk.key_amount("1200")
    await kiosk.on_screen("PresentCardScreen")
    burst(kiosk, ["5"])
    await kiosk.until(lambda: "The amount is set" in kiosk.text("#hint"))
    assert kiosk.app.sale.amount == 1200
    await pay(kiosk, 1200)
    assert await charged_amounts(kiosk, 1) == [1200]


async def test_a_sale_that_fails_on_a_bug_says_so_without_internals(
    kiosk: Kiosk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the sale's worker (here the desk raising) brings the cashier back to the
    amount with words that say what it means, never an exception's class name."""

    async def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("internal")

    assert kiosk.services.desk is not None
    monkeypatch.setattr(kiosk.services.desk, "charge", broken)
    await kiosk.key_amount("300")
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(kiosk.sandbox.create_wallet(1_000).qr_token))
    await kiosk.on_screen("AmountScreen")
    await kiosk.until(lambda: "stopped on an error" in kiosk.text("#notice"))
    assert "KeyError" not in kiosk.text("#notice")
