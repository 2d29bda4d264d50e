"""Pairing: the installer types the terminal's username, its password (masked) and the
manager PIN; the app verifies them with the service before storing anything."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from qrpos import manager_pin, spec
from qrpos.present.i18n import t
from qrpos.tui.messages import PairingSubmitted
from qrpos.tui.screens.base import FORM_KEYS, KioskScreen, TypedAhead


class PairingScreen(TypedAhead, KioskScreen):
    """First start (no credentials) or after a 401. The password never leaves the Input
    except into the app's pairing worker; it is not logged or echoed. Typed at full
    speed, no Tab or Enter is lost (`TypedAhead`)."""

    BINDINGS: ClassVar[list[BindingType]] = list(FORM_KEYS)
    SUBMIT_FIELDS = frozenset({"pin"})

    def __init__(self, *, first: bool, pin_known: bool, username: str | None = None) -> None:
        super().__init__()
        self.first = first
        #: a manager PIN is set already: the PIN field may stay empty
        self.pin_known = pin_known
        self.username = username or ""
        self._notice: tuple[str, dict[str, str], bool] = ("", {}, False)

    async def retranslate(self) -> None:
        # the typed fields stay: only the words change
        self.query_one("#title", Static).update(t("pair.title"))
        keys = ("pair.username", "pair.password", self._pin_key())
        for label, key in zip(self.query(Label), keys, strict=False):
            label.update(t(key))
        self.query_one("#hint", Static).update(t("pair.hint"))
        key, fields, error = self._notice
        self.show_notice(key, error=error, **fields)

    def _pin_key(self) -> str:
        return "pair.pin_keep" if self.pin_known else "pair.pin"

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(t("pair.title"))
        with Vertical(id="pair-form"):
            yield Label(t("pair.username"), markup=False)
            yield Input(self.username, id="username", max_length=40)
            yield Label(t("pair.password"), markup=False)
            yield Input(id="password", password=True, max_length=80)
            yield Label(t(self._pin_key()), markup=False)
            yield Input(id="pin", password=True, max_length=manager_pin.MAX_LEN, restrict=r"\d*")
            yield Static("", id="notice", classes="prose", markup=False)
        yield from self.compose_footer(t("pair.hint"))

    def on_mount(self) -> None:
        self.query_one("#password" if self.username else "#username", Input).focus()

    def show_notice(self, key: str, *, error: bool = False, **fields: str) -> None:
        """Feedback under the form, a catalogue key ("" clears); never the password."""
        self._notice = (key, fields, error)
        notice = self.query_one("#notice", Static)
        notice.update(t(key, **fields) if key else "")
        notice.set_class(error, "error")

    def submitted(self, field: Input) -> None:
        """Enter in the PIN: check the form, then ask the app to pair."""
        username = self.query_one("#username", Input).value.strip()
        password = self.query_one("#password", Input).value
        pin = self.query_one("#pin", Input).value
        if not spec.USERNAME_RE.match(username):
            self.show_notice("pair.bad_username", error=True)
            return
        if not spec.PASSWORD_RE.match(password):
            self.show_notice("pair.bad_password", error=True)
            return
        pin_known = self.pin_known
        pin_ok = pin.isdigit() and manager_pin.MIN_LEN <= len(pin) <= manager_pin.MAX_LEN
        if (pin or not pin_known) and not pin_ok:
            self.show_notice("pair.bad_pin", error=True)
            return
        self.show_notice("pair.verifying")
        self.post_message(PairingSubmitted(username, password, pin or None))
