"""The till's peripherals from the configuration, for `qrpos run` and `qrpos demo` alike:
its tones, its receipt printer, its customer display and its handheld scanner. Light on
purpose (no keyring, no camera): the demo loads it too, so an installer trying a real
printer, scanner or customer display with the demo finds each working as in `qrpos run`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from qrpos.config import Config
from qrpos.ledger import Ledger
from qrpos.peripherals.printer import Port, PrinterSettingError, open_port
from qrpos.peripherals.printing import Printing, print_settings
from qrpos.peripherals.sound import Sounds, SoundSettingError, sounds_from_settings

if TYPE_CHECKING:
    from PIL import Image

    from qrpos.peripherals.display_port import CustomerDisplay, DisplaySink
    from qrpos.scanner import ScanLoop
    from qrpos.scanner.handheld import HandheldReader

log = logging.getLogger("qrpos.kiosk")


def till_sounds(config: Config) -> Sounds:
    """The till's tones per `[sound]`; a setting that cannot be used leaves the bell
    (and says why in the journal): a sound never keeps the kiosk from selling."""
    try:
        return sounds_from_settings(config.sound)
    except SoundSettingError as exc:
        log.warning("%s: the terminal bell is used instead", exc)
        return Sounds()


def till_printing(
    config: Config, ledger: Ledger, stack: contextlib.ExitStack, *, fallback: Port | None = None
) -> Printing | None:
    """The receipt printer per `[printer]` / `QRPOS_PRINTER`, its worker started (and
    stopped with `stack`); None when none is set. A setting that cannot be used is said
    in the journal and the till sells without slips (`fallback`: the demo's own)."""
    try:
        settings = print_settings(config.printer)
        port = open_port(settings.device)
    except PrinterSettingError as exc:
        log.warning("%s: no slips are printed", exc)
        return None
    port = port or fallback
    if port is None:
        return None
    printing = Printing(ledger, port, settings)
    printing.start()
    stack.callback(printing.stop)
    log.info("printing slips on %s (%d mm)", settings.device, settings.paper_mm)
    return printing


def till_customer_display(
    config: Config,
    stack: contextlib.ExitStack,
    *,
    scanner: ScanLoop | None = None,
    fallback: DisplaySink | None = None,
) -> CustomerDisplay | None:
    """The customer display per `[customer_display]` / `QRPOS_CUSTOMER_DISPLAY`, its worker
    started (and stopped with `stack`, saying "not connected to the till"); None when
    none is set. A screen shows `scanner`'s newest frame beside the amount. A setting
    that cannot be used is said in the journal and the till sells without it (`fallback`:
    the demo's own)."""
    from qrpos.peripherals.display_port import CustomerDisplay
    from qrpos.peripherals.display_settings import (
        DisplaySettingError,
        DisplaySettings,
        display_settings,
        open_display,
    )
    from qrpos.present.customer import offline_view

    try:
        settings = display_settings(config.customer_display)
        sink = open_display(settings)
    except DisplaySettingError as exc:
        log.warning("%s: no customer display", exc)
        settings, sink = DisplaySettings(), None
    sink = sink or fallback
    if sink is None:
        return None
    camera: Callable[[], Image.Image | None] | None = None
    if sink.live and scanner is not None:
        from qrpos.peripherals.customer_picture import camera_picture

        live = scanner

        def camera_frame() -> Image.Image | None:
            return camera_picture(live.latest_frame())

        camera = camera_frame

    header = config.printer.get("header", "")
    first_line = header.splitlines()[0] if isinstance(header, str) and header else ""
    if isinstance(header, list) and header:
        first_line = str(header[0])
    display = CustomerDisplay(
        sink,
        camera=camera,
        shop=settings.shop or first_line,
    )
    display.show(offline_view())  # until the kiosk's first view: "not connected to the till"
    display.start()
    stack.callback(display.stop)
    log.info("customer display on %s", sink.name)
    return display


def till_handheld(config: Config, scanner: ScanLoop) -> HandheldReader | None:
    """The handheld scanner `[scanner] handheld` names, beside the camera; a setting that
    cannot be used is said in the journal and the camera alone reads codes."""
    from qrpos.scanner.handheld import HandheldReader

    device = config.scanner.get("handheld")
    if not device:
        return None
    try:
        return HandheldReader(str(device), scanner.handle_scan)
    except ValueError as exc:
        log.warning("%s: the camera alone reads codes", exc)
        return None
