"""Issue 48: a fresh card (no base URL, no username, no password) opens on the pairing
screen, and the installer pairs it by typing.

The kiosk is built by the production wiring itself (`production_services`, a real outbox
file in tmp_path) against the sandbox over loopback HTTP. The only seam replaced is root's
side of the pairing socket (`QRPOS_PAIR_SOCKET`, our own protocol: three lines in, one
answer line out), played by a thread that records what it was handed. Everything is typed
key by key under Pilot, as an installer would.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kiosk_harness import FAST, Kiosk, fixed_clock
from textual.widgets import Input

from qrpos.config import PAIRING_FILE, Config
from qrpos.kiosk.production import production_services
from qrpos.present.i18n import set_language, t
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp

WRONG = "vpt_" + "x" * 32


class RootHelper:
    """Root's side of qrpos-pair.socket: records each pairing handed to it, answers."""

    def __init__(self, path: Path, answer: str = "ok") -> None:
        self.path = path
        self.answer = answer
        self.received: list[list[str]] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(1)
        self._server.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5.0)
                data = b""
                while chunk := conn.recv(4096):
                    data += chunk
                self.received.append(data.decode().splitlines())
                conn.sendall(f"{self.answer}\n".encode())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._server.close()


@pytest.fixture
def root_helper(tmp_path: Path) -> Iterator[RootHelper]:
    helper = RootHelper(tmp_path / "pair.sock")
    yield helper
    helper.close()


def _screen_text(kiosk: Kiosk) -> str:
    """Every cell drawn on the screen now, line by line (what the installer sees)."""
    strips = kiosk.app.screen._compositor.render_strips()
    return "\n".join(strip.text for strip in strips)


def _fresh_card(tmp_path: Path) -> Config:
    return Config(base_url=None, username=None, state_dir=tmp_path / "state", language="en")


async def _type(kiosk: Kiosk, *fields: str) -> None:
    """Type each field key by key, Tab between them, Enter at the end."""
    keys: list[str] = []
    for i, value in enumerate(fields):
        keys.extend(value)
        keys.append("enter" if i == len(fields) - 1 else "tab")
    await kiosk.pilot.press(*keys)


async def test_a_fresh_card_opens_on_pairing_and_pairs_by_typing(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    root_helper: RootHelper,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    set_language("en")
    env = {"QRPOS_PAIR_SOCKET": str(root_helper.path)}
    with production_services(_fresh_card(tmp_path), env=env) as services:
        services.scanner = None  # no camera here; the till's screens are what is tested
        services.clock = fixed_clock
        app = KioskApp(services, **FAST)  # type: ignore[arg-type]
        async with app.run_test(size=(80, 24)) as pilot:
            kiosk = Kiosk(app, pilot, services, sandbox, terminal, None)  # type: ignore[arg-type]
            await kiosk.on_screen("PairingScreen")
            screen = app.screen
            # the address field comes first and has the focus: a fresh card knows none
            assert screen.focused is screen.query_one("#base_url")
            assert t("pair.base_url") in _screen_text(kiosk)

            # a wrong password: said plainly; the typed address and username stay
            await _type(kiosk, live_url, terminal.username, WRONG, "2468")
            await kiosk.until(lambda: t("pair.rejected") in kiosk.text("#notice"))
            # seen on an 80x24 screen (a serial console): the form with four fields fits
            assert t("pair.rejected") in _screen_text(kiosk)
            assert screen.query_one("#base_url", Input).value == live_url
            assert screen.query_one("#username", Input).value == terminal.username
            assert root_helper.received == []  # nothing unverified goes to root
            assert services.client is None
            assert WRONG not in _screen_text(kiosk)

            # the right one: handed to root through the socket, then the till opens
            screen.query_one("#password", Input).value = terminal.password
            screen.query_one("#pin", Input).focus()
            await pilot.press("enter")
            assert terminal.password not in _screen_text(kiosk)
            await kiosk.on_screen("AmountScreen")
            assert root_helper.received == [[live_url, terminal.username, terminal.password]]
            assert services.service_address is not None
            assert services.service_address.value == live_url
            paired = kiosk.services.client  # (mypy still holds the `is None` from above)
            assert paired is not None and paired.username == terminal.username
            assert terminal.username in (tmp_path / "state" / PAIRING_FILE).read_text()
            assert terminal.password not in _screen_text(kiosk)
    # the pairing was logged, its password never was (nor the wrong one)
    assert f"terminal paired as {terminal.username}" in caplog.text
    assert terminal.password not in caplog.text
    assert WRONG not in caplog.text
    assert terminal.password[-8:] not in caplog.text


async def test_root_refusing_the_pairing_keeps_the_form_and_says_why(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    root_helper: RootHelper,
) -> None:
    set_language("en")
    root_helper.answer = "failed 4"  # root's second check was rejected by the service
    env = {"QRPOS_PAIR_SOCKET": str(root_helper.path)}
    with production_services(_fresh_card(tmp_path), env=env) as services:
        services.scanner = None
        app = KioskApp(services, **FAST)  # type: ignore[arg-type]
        async with app.run_test(size=(80, 24)) as pilot:
            kiosk = Kiosk(app, pilot, services, sandbox, terminal, None)  # type: ignore[arg-type]
            await kiosk.on_screen("PairingScreen")
            form = app.screen
            fields = ("#base_url", "#username", "#password", "#pin")
            typed = ("ftp://nowhere", terminal.username, terminal.password, "2468")
            for field, value in zip(fields, typed, strict=True):
                form.query_one(field, Input).value = value
            form.query_one("#pin", Input).focus()
            await pilot.press("enter")
            await kiosk.until(lambda: t("pair.bad_base_url") in kiosk.text("#notice"))
            assert root_helper.received == []
            form.query_one("#base_url", Input).value = live_url
            await pilot.press("enter")
            await kiosk.until(lambda: "rejected the password when root" in kiosk.text("#notice"))
            # all of it on an 80x24 screen (a serial console): its second line too
            assert "nothing was stored" in _screen_text(kiosk)
            assert type(app.screen).__name__ == "PairingScreen"
            assert services.client is None
            # nothing is kept of a pairing root did not store: the address is unset again
            assert services.service_address is not None
            assert services.service_address.value is None
            assert root_helper.received == [[live_url, terminal.username, terminal.password]]
            assert terminal.password not in _screen_text(kiosk)
