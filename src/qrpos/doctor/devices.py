"""`qrpos doctor`'s checks of the till's own parts: the camera, the decoder reading exact
bytes, the handheld scanner, the receipt printer and the customer display. Each reads its
section of config.toml and touches the device without printing or showing anything."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from qrpos.doctor.table import Check, Status
from qrpos.present.i18n import t
from qrpos.present.words import error_words, words
from qrpos.scanner.handheld import keyboards

#: bytes no text decoder survives unchanged: a charset guess would re-encode them
BINARY_PROBE = b"vqr_doctor-\xe9\xff\x00-binary"


def check_camera(settings: Mapping[str, Any], seconds: float) -> Check:
    """Open the configured camera and count real frames for `seconds`."""
    from qrpos.scanner import probe_camera

    result = probe_camera(settings, seconds=seconds)
    if result.ok:
        return Check("camera", Status.OK, words(result.message))
    return Check("camera", Status.FAIL, words(result.message), t("doctor.fix.camera"))


def _qr_image(payload: bytes, scale: int = 6) -> np.ndarray[Any, np.dtype[np.uint8]]:
    import segno

    matrix = np.array(segno.make_qr(payload, mode="byte").matrix, dtype=bool)
    modules = np.pad(matrix, 4)  # the quiet zone the standard asks for
    image = np.where(modules, 0, 255).astype(np.uint8)
    return np.kron(image, np.ones((scale, scale), dtype=np.uint8))


def check_decoder(name: str | None) -> Check:
    """Load the decoder and prove it returns a QR's bytes exactly (binary mode)."""
    from qrpos.scanner import DecoderUnavailable, make_decoder

    try:
        decoder = make_decoder(name)
    except DecoderUnavailable as exc:
        return Check("decoder", Status.FAIL, str(exc), t("doctor.fix.decoder"))
    found = decoder.decode(_qr_image(BINARY_PROBE))
    if found == [BINARY_PROBE]:
        return Check("decoder", Status.OK, t("doctor.decoder.ok", name=decoder.name))
    key = "doctor.decoder.read_nothing" if not found else "doctor.decoder.altered"
    return Check("decoder", Status.FAIL, t(key, name=decoder.name), t("doctor.fix.binary"))


def check_handheld(settings: Mapping[str, Any], proc_devices: str | None = None) -> Check:
    """The handheld scanner `[scanner] handheld` names: there and readable by this user.
    Without one, the input devices that look like a scanner (`handheld.keyboards`)."""
    device = settings.get("handheld")
    if not device:
        found = [k for k in keyboards(proc_devices) if k.looks_like_a_scanner]
        if not found:
            return Check("handheld", Status.SKIP, t("doctor.handheld.none"))
        named = ", ".join(f"{k.name} ({k.path})" for k in found)
        return Check(
            "handheld",
            Status.SKIP,
            t("doctor.handheld.found", names=named),
            t("doctor.fix.handheld_set", path=found[0].path),
        )
    kind, _, where = str(device).partition(":")
    path = where.partition("@")[0]
    group = "input" if kind == "evdev" else "dialout"
    if kind not in ("evdev", "serial") or not path:
        return Check("handheld", Status.FAIL, t("doctor.handheld.bad", setting=str(device)))
    if not Path(path).exists():
        return Check(
            "handheld",
            Status.FAIL,
            t("doctor.handheld.missing", path=path),
            t("doctor.fix.handheld_plug"),
        )
    if not os.access(path, os.R_OK):
        return Check(
            "handheld",
            Status.FAIL,
            t("doctor.handheld.denied", path=path),
            t("doctor.fix.handheld_group", group=group),
        )
    return Check("handheld", Status.OK, t("doctor.handheld.ok", path=path))


def check_printer(settings: Mapping[str, Any]) -> Check:
    """The receipt printer `[printer]` / `QRPOS_PRINTER` names: reached, and its paper
    sensor read where it has one; nothing is printed (`qrpos print test` prints)."""
    from qrpos.peripherals.printer import PrinterSettingError, PrinterTrouble, open_port
    from qrpos.peripherals.printing import print_settings

    try:
        chosen = print_settings(settings)
        port = open_port(chosen.device)
    except PrinterSettingError as exc:
        return Check("printer", Status.FAIL, words(exc.said), t("doctor.fix.printer_set"))
    if port is None:
        return Check("printer", Status.SKIP, t("doctor.printer.none"))
    try:
        port.probe()
    except PrinterTrouble as exc:
        fix = "doctor.fix.printer_paper" if exc.said.key == "printer.no_paper" else None
        return Check(
            "printer",
            Status.FAIL,
            words(exc.said),
            t(fix) if fix else t("doctor.fix.printer_reach", group="lp"),
        )
    return Check(
        "printer", Status.OK, t("doctor.printer.ok", device=chosen.device, mm=chosen.paper_mm)
    )


def check_customer_display(
    settings: Mapping[str, Any], sys_drm: Path = Path("/sys/class/drm")
) -> Check:
    """The customer display `[customer_display]` / `QRPOS_CUSTOMER_DISPLAY` names: a pole
    display's port opens (nothing is sent); a screen's connector has a screen plugged in
    (read from sysfs: the kiosk may hold the screen now) and pykms is there."""
    from qrpos.peripherals.display_port import DisplayTrouble, load_pykms
    from qrpos.peripherals.display_settings import DisplaySettingError, display_settings
    from qrpos.said import say

    name = "customer display"
    try:
        chosen = display_settings(settings)
    except DisplaySettingError as exc:
        return Check(name, Status.FAIL, error_words(exc), t("doctor.display.fix"))
    if chosen.kind == "off":
        return Check(name, Status.SKIP, t("doctor.display.none"))
    try:
        if chosen.kind == "vfd":
            from qrpos.peripherals.pole import PoleSink

            PoleSink(chosen.target, chosen.baud, chosen.model).write(b"")
        else:
            # the connector named, never a pattern: `kms:*` must not find any screen
            statuses = sorted(
                card / "status"
                for card in sys_drm.glob("card*")
                if card.name.partition("-")[2] == chosen.target and (card / "status").is_file()
            )
            plugged = any(p.read_text().strip() == "connected" for p in statuses)
            if not plugged:
                raise DisplayTrouble(
                    say(
                        "display.connector",
                        "no connected screen on {connector}",
                        connector=chosen.target,
                    )
                )
            load_pykms()
    except (DisplayTrouble, OSError) as exc:
        return Check(name, Status.FAIL, error_words(exc), t("doctor.display.fix"))
    return Check(name, Status.OK, t("doctor.display.ok", device=chosen.device))
