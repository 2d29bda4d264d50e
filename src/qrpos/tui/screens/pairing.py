"""Pairing: the installer types the terminal's username, its password (masked) and the
manager PIN; the app verifies them with the service before storing anything."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from qrpos import manager_pin, spec
from qrpos.tui.i18n import t
from qrpos.tui.screens.base import KioskScreen


class PairingScreen(KioskScreen):
    """First start (no credentials) or after a 401. The password never leaves the Input
    except into the app's pairing worker; it is not logged or echoed."""

    def __init__(self, *, first: bool, username: str | None = None) -> None:
        super().__init__()
        self.first = first
        self.username = username or ""

    def compose(self) -> ComposeResult:
        pin_known = manager_pin.has_pin(self.kiosk().services.config.state_dir)
        yield from self.compose_frame(t("pair.title"), "")
        with Vertical(id="pair-form"):
            yield Label(t("pair.username"), markup=False)
            yield Input(self.username, id="username", max_length=40)
            yield Label(t("pair.password"), markup=False)
            yield Input(id="password", password=True, max_length=80)
            yield Label(t("pair.pin_keep") if pin_known else t("pair.pin"), markup=False)
            yield Input(id="pin", password=True, max_length=manager_pin.MAX_LEN, restrict=r"\d*")
            yield Static("", id="notice", markup=False)
        yield from self.compose_footer(t("pair.hint"))

    def on_mount(self) -> None:
        self.query_one("#password" if self.username else "#username", Input).focus()

    def show_notice(self, text: str, *, error: bool = False) -> None:
        """Feedback under the form (never contains the password)."""
        notice = self.query_one("#notice", Static)
        notice.update(text)
        notice.set_class(error, "error")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        username = self.query_one("#username", Input).value.strip()
        password = self.query_one("#password", Input).value
        pin = self.query_one("#pin", Input).value
        if event.input.id != "pin" and not (username and password and pin):
            self.focus_next()
            return
        if not spec.USERNAME_RE.match(username):
            self.show_notice(t("pair.bad_username"), error=True)
            return
        if not spec.PASSWORD_RE.match(password):
            self.show_notice(t("pair.bad_password"), error=True)
            return
        pin_known = manager_pin.has_pin(self.kiosk().services.config.state_dir)
        pin_ok = pin.isdigit() and manager_pin.MIN_LEN <= len(pin) <= manager_pin.MAX_LEN
        if (pin or not pin_known) and not pin_ok:
            self.show_notice(t("pair.bad_pin"), error=True)
            return
        self.show_notice(t("pair.verifying"))
        self.kiosk().pair(username, password, pin or None)
