"""App-wide messages: what arrives from the scanner's threads and from the sale workers."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class TokenScanned(Message):
    """The scan loop read a wallet token (the exact text; never displayed in full)."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def __repr__(self) -> str:
        return "TokenScanned(…)"


class ScanRefusedMessage(Message):
    """The scan loop read a code that is not a wallet token."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class CameraStats(Message):
    """Frames per second and camera state; a burst coalesces to the latest one."""

    def __init__(self, fps: float | None, camera_state: str, last_error: str | None) -> None:
        super().__init__()
        self.fps = fps
        self.camera_state = camera_state
        self.last_error = last_error

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CameraStats)


class ChargeProgressed(Message):
    """The ledger reports a step of a charge (sending, retrying, checking history)."""

    def __init__(self, progress: Any) -> None:
        super().__init__()
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ChargeProgressed)
