"""The bottom line: terminal, service reachability, unsettled count, camera, local time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rich.text import Text
from textual.widget import Widget

from qrpos.present.format import local_time
from qrpos.present.i18n import t


@dataclass(frozen=True)
class KioskStatus:
    """What the status bar shows. The app holds one in a reactive attribute and replaces
    it (`dataclasses.replace`) on every change; each status bar watches that attribute."""

    username: str | None = None
    #: True reachable, False not, None not checked yet
    online: bool | None = None
    #: when reachability last changed
    online_since: datetime | None = None
    unresolved: int = 0
    camera_state: str | None = None
    fps: float | None = None
    #: what is still starting (a `startup.<key>` locale key), None once sales can start
    starting: str | None = None
    #: the kiosk's clock, moved on every second by the app
    now: datetime | None = None
    #: the language the line is in (a switch redraws it)
    language: str = ""
    #: another install is using this terminal's credentials (`OutboxListing.foreign_activity`)
    foreign: bool = False
    #: the receipt printer needs attention (off, unplugged, out of paper): slips wait
    printer: bool = False
    #: the customer display needs attention (unplugged, off): the sale goes on
    display: bool = False
    #: the cashier whose shift is open (None: none, or the till has no shifts)
    cashier: str | None = None


def camera_words(state: str) -> str:
    """A camera state in the current language (an unknown state stays as it is)."""
    words = t(f"camera.{state}")
    return state if words == f"camera.{state}" else words


def status_line(status: KioskStatus, width: int) -> Text:
    """The status bar's one line, `width` cells wide, in the current language."""
    line = Text(no_wrap=True, overflow="ellipsis")
    unpaired = "…" if status.starting else t("status.not_paired")
    line.append(f" {status.username or unpaired} ", style="bold")
    line.append("│ ")
    if status.cashier:
        line.append(status.cashier, style="bold cyan")
        line.append(" │ ")
    if status.starting:
        line.append(t("status.starting", what=t(f"startup.{status.starting}")), style="bold yellow")
    elif status.online is None:
        line.append(t("status.unknown"))
    elif status.online:
        line.append(t("status.online"), style="green")
    else:
        when = local_time(status.online_since, seconds=False) if status.online_since else "?"
        line.append(t("status.offline", since=when), style="bold red")
    line.append(" │ ")
    if status.foreign:
        line.append(t("status.foreign"), style="bold reverse red")
        line.append(" │ ")
    if status.printer or status.display:
        # both in trouble: one short item, so the unsettled count and the camera still fit
        key = "status.printer" if not status.display else "status.display.missing"
        if status.printer and status.display:
            key = "status.display.both"
        line.append(t(key), style="bold reverse yellow")
        line.append(" │ ")
    line.append(
        t("status.unresolved", count=status.unresolved),
        style="bold yellow" if status.unresolved else "",
    )
    line.append(" │ ")
    if status.camera_state is None:
        line.append(t("status.no_camera"))
    elif status.camera_state == "running":
        # a frame rate says "running" in every language, in less room
        fps = "-" if status.fps is None else f"{status.fps:.0f}"
        line.append(t("status.camera", fps=fps))
    else:
        # frames per second mean nothing while the camera is not running
        line.append(t("status.camera_idle", state=camera_words(status.camera_state)))
    clock = local_time(status.now) if status.now else "--:--:--"
    room = width - len(clock) - 1
    if line.cell_len > room:
        line.truncate(max(room, 0), overflow="ellipsis")
    line.append(" " * max(1, room - line.cell_len))
    line.append(clock, style="bold")
    return line


class StatusBar(Widget):
    """One line at the bottom of every screen, drawn from the app's reactive `status`
    (watched, never pulled: nothing calls a refresh)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._status = KioskStatus()

    def on_mount(self) -> None:
        self.watch(self.app, "status", self._status_changed, init=True)

    def _status_changed(self, status: KioskStatus) -> None:
        self._status = status
        self.refresh()

    def render(self) -> Text:
        return status_line(self._status, max(self.size.width, 1))
