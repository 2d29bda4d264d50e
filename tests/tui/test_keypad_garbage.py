"""The keypad fed garbage: the real amount screen under Pilot either confirms an amount
in range or refuses with a notice; nothing is stored without a scan (tests/test_garbage_in.py
has the other local surfaces)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kiosk_harness import FAST, make_services

from qrpos import spec
from qrpos.ledger import outbox_views
from qrpos.simulator import TerminalCredentials
from qrpos.tui.app import KioskApp
from qrpos.tui.screens.amount import AmountScreen

FIXTURES = [HealthCheck.function_scoped_fixture]

KEYS_PRESSED = st.lists(
    st.sampled_from(
        [*"0123456789", "asterisk", "full_stop", "comma", "minus", "backspace", "delete",
         "slash", "insert", "end", "home", "pageup", "x", "f5", "ctrl+c", "space", "tab",
         "question_mark", "up", "down"]
    ),
    max_size=14,
)  # fmt: skip


@settings(max_examples=8, deadline=None, suppress_health_check=FIXTURES)
@given(keys=KEYS_PRESSED)
def test_keypad_garbage_gives_an_amount_in_range_or_a_clear_refusal(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials, keys: list[str]
) -> None:
    async def drive() -> None:
        state = tmp_path / f"k{abs(hash(tuple(keys)))}"
        state.mkdir(exist_ok=True)
        services, ledger = make_services(state, live_url, terminal)
        app = KioskApp(services, **FAST)  # type: ignore[arg-type]
        entered: dict[int, int] = {}  # the hook sees a bubbling message once per node

        def hook(message: object) -> None:
            if isinstance(message, AmountScreen.AmountEntered):
                entered[id(message)] = message.amount

        try:
            async with app.run_test(size=(80, 24), message_hook=hook) as pilot:
                while not isinstance(app.screen, AmountScreen):
                    await pilot.pause(0.02)
                screen = app.screen
                await pilot.press(*keys)
                keyed = screen.amount
                await pilot.press("enter")
                await pilot.pause()
                if entered:
                    assert list(entered.values()) == [keyed]
                    assert keyed is not None
                    assert spec.AMOUNT_MIN_MNT <= keyed <= spec.AMOUNT_MAX_MNT
                else:
                    notice = str(screen.query_one("#notice").render())
                    assert notice.strip(), "refused without saying why"
                    assert keyed is None or not 1 <= keyed <= spec.AMOUNT_MAX_MNT
            # no scan, so nothing was stored
            assert outbox_views(ledger, include_final=True) == []
        finally:
            ledger.close()

    asyncio.run(drive())
