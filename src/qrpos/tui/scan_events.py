"""The scan loop's events as app messages (the loop calls back from its own threads)."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from qrpos.tui.messages import CameraStats, ScanRefusedMessage, TokenScanned


def scan_message(event: Any) -> Message | None:
    """The app message for a scan loop event (None for unknown events)."""
    # the scanner (OpenCV, numpy) loads after the first screen: see qrpos.tui.startup
    from qrpos.scanner import ScanRefused, ScanStats, TokenRead

    if isinstance(event, TokenRead):
        return TokenScanned(event.token)
    if isinstance(event, ScanRefused):
        return ScanRefusedMessage(event.reason, str(event.code))
    if isinstance(event, ScanStats):
        return CameraStats(event.fps, event.camera_state, event.last_error)
    return None
