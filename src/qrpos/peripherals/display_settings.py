"""`[customer_display]`: which customer display, and how to reach it.

    [customer_display]
    device = "vfd:/dev/ttyUSB0@9600"   # or "kms:HDMI-A-2", or "off" (the default)
    protocol = "escpos"                # a pole display's command set: escpos | cd5220
    codepage = "pc866"                 # pc866 (Cyrillic) | ascii
    udc = true                         # draw Ө, Ү, ₮ as user-defined characters (escpos)
    shop = "Цайны газар №3"            # the name the idle screen shows

`QRPOS_CUSTOMER_DISPLAY` overrides `device` (config.py merges it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from qrpos.errors import QrposError
from qrpos.peripherals.display_port import DisplaySink
from qrpos.peripherals.pole import CODEPAGES, PROTOCOLS, PoleModel
from qrpos.said import say

#: the baud rates a serial port is asked for: pyserial hands a larger one to the kernel as
#: a C int, and it overflows (OverflowError, not a port that cannot be opened)
MIN_BAUD, MAX_BAUD = 50, 4_000_000


class DisplaySettingError(QrposError, ValueError):
    """A `[customer_display]` setting that names no display; the message names it."""


@dataclass(frozen=True)
class DisplaySettings:
    """The customer display's settings, checked."""

    device: str = "off"
    #: "off", "kms" or "vfd"
    kind: str = "off"
    #: the connector (kms) or the serial device (vfd)
    target: str = ""
    baud: int = 9600
    model: PoleModel = field(default_factory=PoleModel)
    shop: str = ""


def display_settings(table: Mapping[str, Any]) -> DisplaySettings:
    """`DisplaySettings` from the `[customer_display]` table; `DisplaySettingError` names
    the setting that cannot be used."""
    device = str(table.get("device", "off")).strip() or "off"
    protocol = str(table.get("protocol", "escpos"))
    if protocol not in PROTOCOLS:
        raise DisplaySettingError(
            say(
                "display.setting_protocol",
                "[customer_display] protocol is escpos or cd5220, not {value}",
                value=repr(protocol),
            )
        )
    codepage = str(table.get("codepage", "pc866"))
    if codepage not in CODEPAGES:
        raise DisplaySettingError(
            say(
                "display.setting_codepage",
                "[customer_display] codepage is pc866 or ascii, not {value}",
                value=repr(codepage),
            )
        )
    udc = table.get("udc", protocol == "escpos")
    if not isinstance(udc, bool):  # "false" in quotes is a string, and bool() of it is True
        raise DisplaySettingError(
            say(
                "display.setting_udc",
                "[customer_display] udc is true or false (no quotes), not {value}",
                value=repr(udc),
            )
        )
    model = PoleModel(protocol, codepage, udc)
    shop = str(table.get("shop", ""))
    if device == "off":
        return DisplaySettings(device, "off", "", model=model, shop=shop)
    kind, _, rest = device.partition(":")
    rest = rest.strip()  # "vfd: /dev/ttyUSB0": no device's name starts with a space
    if kind == "kms" and rest:
        return DisplaySettings(device, "kms", rest, model=model, shop=shop)
    if kind == "vfd" and rest:
        # the baud follows the last "@": a device's name may hold one (by-id links)
        path, at, baud_text = rest.rpartition("@")
        if not at:
            path, baud_text = rest, ""
        path = path.rstrip()
        if _is_console(path):
            raise DisplaySettingError(
                say(
                    "display.setting_console",
                    "[customer_display] {value} is a console, not a pole display: the "
                    "display's frames would be written over the till's own screen",
                    value=repr(path),
                )
            )
        try:
            baud = int(baud_text) if baud_text else 9600
        except ValueError:
            raise DisplaySettingError(
                say(
                    "display.setting_baud",
                    "[customer_display] the baud rate in {value} is not a number",
                    value=repr(device),
                )
            ) from None
        if path and not MIN_BAUD <= baud <= MAX_BAUD:
            raise DisplaySettingError(
                say(
                    "display.setting_baud_range",
                    "[customer_display] the baud rate in {value} is not {low} to {high}",
                    value=repr(device),
                    low=MIN_BAUD,
                    high=MAX_BAUD,
                )
            )
        if path:
            return DisplaySettings(device, "vfd", path, baud, model, shop)
    raise DisplaySettingError(
        say(
            "display.setting_device",
            "[customer_display] device is off, kms:CONNECTOR or vfd:DEVICE[@BAUD], not {value}",
            value=repr(device),
        )
    )


def _is_console(path: str) -> bool:
    """A virtual console or the kernel console (`/dev/tty1`, `/dev/tty`, `/dev/console`):
    the kiosk runs on one, and a pole display is a serial port (ttyUSB, ttyACM, ttyS...)."""
    name = path.removeprefix("/dev/")
    return name in ("tty", "console") or (
        name.startswith("tty") and name[3:].isdigit() and path.startswith("/dev/")
    )


def open_display(settings: DisplaySettings) -> DisplaySink | None:
    """The sink `settings` names (nothing is opened yet: the first view opens it); None
    when the display is off."""
    if settings.kind == "vfd":
        from qrpos.peripherals.pole import PoleSink

        return PoleSink(settings.target, settings.baud, settings.model)
    if settings.kind == "kms":
        from qrpos.peripherals.kms import kms_sink

        return kms_sink(settings.target)
    return None
