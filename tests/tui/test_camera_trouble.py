"""What the card screen says about the camera: trouble (no camera, a read error, no
frames) in the catalogue's words of the screen's language, gone again once frames flow;
never the scanner's English detail, and never a note that is not trouble (frames shrunk
to keep the decode budget, which a slow Pi meets all day)."""

from __future__ import annotations

from kiosk_harness import Kiosk

from qrpos.present.i18n import set_language, t
from qrpos.tui.messages import CameraStats

SHRUNK = "decoding took 31 ms (budget 25 ms): frames shrunk to 960 px"
READ_FAILED = "camera read failed: OSError: [Errno 19] No such device"


async def _stats(kiosk: Kiosk, state: str, detail: str | None) -> str:
    kiosk.app.post_message(CameraStats(fps=12.0, camera_state=state, last_error=detail))
    await kiosk.pilot.pause()
    await kiosk.pilot.pause()
    return kiosk.text("#scan-status")


async def test_the_card_screen_names_camera_trouble_in_its_language_and_clears_it(
    kiosk: Kiosk,
) -> None:
    await kiosk.key_amount("1500")
    await kiosk.on_screen("PresentCardScreen")
    waiting = t("present.waiting")
    # a budget note is not trouble: the cashier keeps seeing "waiting"
    assert await _stats(kiosk, "running", SHRUNK) == waiting
    shown = await _stats(kiosk, "error", READ_FAILED)
    assert shown == t("present.camera_error")
    assert "Errno" not in shown and "OSError" not in shown
    assert await _stats(kiosk, "running", READ_FAILED) == waiting  # frames flow again
    for state in ("unavailable", "no_frames"):
        assert await _stats(kiosk, state, None) == t(f"present.camera_{state}")
    # in Mongolian after `L`, redrawn in the new words
    await kiosk.pilot.press("L")
    await kiosk.pilot.pause()
    await kiosk.pilot.pause()
    try:
        assert kiosk.text("#scan-status") == t("present.camera_no_frames")
        assert "Камер" in kiosk.text("#scan-status")
    finally:
        set_language("en")
