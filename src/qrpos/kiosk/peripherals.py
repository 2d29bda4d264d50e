"""The till's peripherals from the configuration, for `qrpos run` and `qrpos demo` alike:
its tones and its receipt printer. Light on purpose (no keyring, no camera): the demo
loads it too."""

from __future__ import annotations

import contextlib
import logging

from qrpos.config import Config
from qrpos.ledger import Ledger
from qrpos.peripherals.printer import Port, PrinterSettingError, open_port
from qrpos.peripherals.printing import Printing, print_settings
from qrpos.peripherals.sound import Sounds, SoundSettingError, sounds_from_settings

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
