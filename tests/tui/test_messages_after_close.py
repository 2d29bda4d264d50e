"""A worker's or a thread's last message may reach the app after its last screen is gone
(the kiosk closing, the benchmark ending its run): every message the app routes to the
screen on top is then dropped quietly, never a `ScreenStackError` traceback."""

from __future__ import annotations

from pathlib import Path

from kiosk_harness import FAST, make_services

from qrpos.ledger import SaleProgress
from qrpos.simulator import TerminalCredentials
from qrpos.tui.app import KioskApp
from qrpos.tui.messages import (
    CameraStats,
    ChargeProgressed,
    PairingAnswered,
    RecoveryLeft,
    ScanRefusedMessage,
)


def test_late_messages_with_no_screen_left_are_dropped(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    services, ledger = make_services(tmp_path, live_url, terminal)
    try:
        app = KioskApp(services, **FAST)  # type: ignore[arg-type]
        assert not app.screen_stack  # as after the last screen was popped
        step = SaleProgress(1, "checking_history", 2, 12.0, "")
        app._charge_progressed(ChargeProgressed(step))
        app._charge_unclear()
        app._recovery_left(RecoveryLeft(2))
        app._pairing_answered(PairingAnswered("pair.rejected"))
        app._camera_stats(CameraStats(fps=None, camera_state="lost", last_error="gone"))
        app._scan_refused(ScanRefusedMessage("not a token", "not_token"))
        assert app.status.unresolved == 1  # the unclear sale is still counted
    finally:
        ledger.close()
