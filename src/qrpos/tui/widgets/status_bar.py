"""The bottom line: terminal, service reachability, unsettled count, camera, local time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rich.text import Text
from textual.widget import Widget

from qrpos.tui.format import local_time, shown_text, since
from qrpos.tui.i18n import t


@dataclass
class KioskStatus:
    """What the status bar shows; the app owns one and updates it."""

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
    #: another install is using this terminal's credentials (`ChargeDesk.foreign_activity`)
    foreign: bool = False


class StatusBar(Widget):
    """One line at the bottom of every screen; pulls the app's `KioskStatus` on refresh."""

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh)

    def render(self) -> Text:
        app = self.app
        status: KioskStatus = getattr(app, "status", KioskStatus())
        now: datetime = app.services.clock()  # type: ignore[attr-defined]
        line = Text(no_wrap=True, overflow="ellipsis")
        unpaired = "…" if status.starting else t("status.not_paired")
        line.append(f" {status.username or unpaired} ", style="bold")
        line.append("│ ")
        if status.starting:
            line.append(
                t("status.starting", what=t(f"startup.{status.starting}")), style="bold yellow"
            )
        elif status.online is None:
            line.append(t("status.unknown"))
        elif status.online:
            line.append(t("status.online"), style="green")
        else:
            when = since(status.online_since, now) if status.online_since else "?"
            line.append(t("status.offline", since=when), style="bold red")
        line.append(" │ ")
        if status.foreign:
            line.append(t("status.foreign"), style="bold reverse red")
            line.append(" │ ")
        line.append(
            t("status.unresolved", count=status.unresolved),
            style="bold yellow" if status.unresolved else "",
        )
        line.append(" │ ")
        if status.camera_state is None:
            line.append(t("status.no_camera"))
        else:
            fps = "-" if status.fps is None else f"{status.fps:.0f}"
            line.append(t("status.camera", state=shown_text(status.camera_state, 12), fps=fps))
        clock = local_time(now)
        pad = max(1, self.size.width - line.cell_len - len(clock) - 1)
        line.append(" " * pad)
        line.append(clock, style="bold")
        return line
