"""Pairing: the installer types the service's address (on a kiosk that may not know it
yet: a fresh card), the terminal's username, its password (masked) and the manager PIN;
the app verifies them with the service before storing anything."""

from __future__ import annotations

from typing import ClassVar
from urllib.parse import urlsplit

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

    def __init__(
        self,
        *,
        first: bool,
        pin_known: bool,
        username: str | None = None,
        base_url: str | None = None,
        ask_base_url: bool = False,
    ) -> None:
        super().__init__()
        self.first = first
        #: a manager PIN is set already: the PIN field may stay empty
        self.pin_known = pin_known
        self.username = username or ""
        #: the form has a field for the service's address (a kiosk, not the demo)
        self.ask_base_url = ask_base_url
        self.base_url = base_url or ""
        self._notice: tuple[str, dict[str, str], bool] = ("", {}, False)

    async def retranslate(self) -> None:
        # the typed fields stay: only the words change
        self.query_one("#title", Static).update(t("pair.title"))
        keys: tuple[str, ...] = ("pair.username", "pair.password", self._pin_key())
        if self.ask_base_url:
            keys = ("pair.base_url", *keys)
        for label, key in zip(self.query(Label), keys, strict=False):
            label.update(t(key))
        self.query_one("#hint", Static).update(t("pair.hint"))
        key, fields, error = self._notice
        self.show_notice(key, error=error, **fields)

    def _pin_key(self) -> str:
        return "pair.pin_keep" if self.pin_known else "pair.pin"

    def compose(self) -> ComposeResult:
        yield from self.compose_frame(t("pair.title"))
        with Vertical(id="pair-form", classes="with-address" if self.ask_base_url else ""):
            if self.ask_base_url:
                yield Label(t("pair.base_url"), markup=False)
                yield Input(self.base_url, id="base_url", max_length=200)
            yield Label(t("pair.username"), markup=False)
            yield Input(self.username, id="username", max_length=40)
            yield Label(t("pair.password"), markup=False)
            yield Input(id="password", password=True, max_length=80)
            yield Label(t(self._pin_key()), markup=False)
            yield Input(id="pin", password=True, max_length=manager_pin.MAX_LEN, restrict=r"\d*")
            yield Static("", id="notice", classes="prose", markup=False)
        yield from self.compose_footer(t("pair.hint"))

    def on_mount(self) -> None:
        if self.ask_base_url and not self.base_url:
            first_empty = "#base_url"
        else:
            first_empty = "#password" if self.username else "#username"
        self.query_one(first_empty, Input).focus()

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
        base_url: str | None = None
        if self.ask_base_url:
            base_url = self.query_one("#base_url", Input).value.strip()
            if not _looks_like_base_url(base_url):
                self.show_notice("pair.bad_base_url", error=True)
                return
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
        self.post_message(PairingSubmitted(username, password, pin or None, base_url))


def _looks_like_base_url(value: str) -> bool:
    """http(s) and a host (which scheme may go where is the client's rule: it refuses
    plain http to another machine, and the form says so)."""
    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return False
    return parts.scheme in ("https", "http") and bool(host) and not any(c.isspace() for c in value)
