"""A sale paid with a handheld scanner through the real app: the recorded wedge stream is
read by key code, charged once, and none of its keystrokes reaches the terminal UI."""

from __future__ import annotations

from pathlib import Path

from kiosk_harness import demo_kiosk
from textual import events
from textual.message import Message

from qrpos.scanner.handheld import HandheldReader, events_of_text
from qrpos.tui.sale import SaleState


async def test_a_handheld_scan_pays_for_the_sale_and_types_nothing(tmp_path: Path) -> None:
    posted: list[Message] = []
    async with demo_kiosk(tmp_path, "en", posted) as (kiosk, world):
        wallet = world.wallet_ids[1]
        before = world.sandbox.wallet(wallet).balance_mnt
        token = world.sandbox.wallet(wallet).qr_token
        await kiosk.key_amount("7500")
        await kiosk.on_screen("PresentCardScreen")
        keys_before = sum(isinstance(m, events.Key) for m in posted)
        recording = tmp_path / "scan.events"
        recording.write_bytes(events_of_text(token))
        assert world.services.scanner is not None
        reader = HandheldReader(
            f"evdev:{recording}", world.services.scanner.handle_scan, retry_s=60
        )
        reader.start()
        try:
            await kiosk.until(lambda: kiosk.app.sale.state is SaleState.RESULT, timeout=15)
        finally:
            reader.stop()
        assert world.sandbox.wallet(wallet).balance_mnt == before - 7500
        assert len([t for t in world.sandbox.transactions() if t.amount_mnt == 7500]) == 1
        assert sum(isinstance(m, events.Key) for m in posted) == keys_before
