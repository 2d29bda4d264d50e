"""`qrpos display`: the customer display from the command line.

    qrpos display test                                   a test pattern on the display set
    qrpos display preview --state paid --png out.png     one state drawn as a picture
    qrpos display preview --state pay --text             the pole display's two lines

`test` sends to the display `[customer_display] device` / `QRPOS_CUSTOMER_DISPLAY` names
(a screen: colour bars and Ө Ү ₮; a pole display: both lines full). `preview` needs no
hardware: `--png` draws the screen's picture (`--size`, `--camera` for a synthetic camera
view beside the amount), `--text` prints the two lines as the configured pole display
shows them (its code page's fallbacks applied). Exit codes: 0 shown or drawn, 1 local
error (no display set, the display in trouble, the file not written), 64 usage.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from qrpos.cli.common import EXIT_LOCAL_ERROR, EXIT_OK, SETUP_ERRORS, config_from_args, fail
from qrpos.cli.usage import UsageError, amount_mnt
from qrpos.present.customer import REASON_OUTCOMES, VIEW_KINDS
from qrpos.present.i18n import t


def picture_size(value: str) -> tuple[int, int]:
    """``800x480``: a picture's width and height (16 to 8192 each)."""
    width, sep, height = value.lower().partition("x")
    if (
        sep
        and width.isascii()
        and width.isdigit()
        and height.isascii()
        and height.isdigit()
        and 16 <= int(width) <= 8192
        and 16 <= int(height) <= 8192
    ):
        return int(width), int(height)
    raise UsageError(t("cli.display.bad_size"))


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "display", help=t("help.display.summary"), description=t("help.display.about")
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("test", help=t("help.display.test"))
    preview = actions.add_parser("preview", help=t("help.display.preview"))
    preview.add_argument(
        "--state",
        required=True,
        choices=VIEW_KINDS,
        help=t("help.display.state", states=", ".join(VIEW_KINDS)),
    )
    preview.add_argument("--amount", type=amount_mnt, default=12_500, help=t("help.display.amount"))
    preview.add_argument(
        "--reason",
        choices=tuple(REASON_OUTCOMES),
        default="no_money",
        help=t("help.display.reason", reasons=", ".join(REASON_OUTCOMES)),
    )
    out = preview.add_mutually_exclusive_group(required=True)
    out.add_argument("--png", metavar="FILE", type=Path, help=t("help.display.png"))
    out.add_argument("--text", action="store_true", help=t("help.display.text"))
    preview.add_argument(
        "--size", type=picture_size, default=(800, 480), help=t("help.display.size")
    )
    preview.add_argument("--camera", action="store_true", help=t("help.display.camera"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from qrpos.peripherals.display_settings import DisplaySettingError, display_settings

    try:
        config = config_from_args(args)
        settings = display_settings(config.customer_display)
    except (*SETUP_ERRORS, DisplaySettingError) as exc:
        return fail(exc)
    if args.action == "test":
        return _test(settings)
    from qrpos.present.customer import preview_view

    view = preview_view(args.state, args.amount, args.reason, settings.shop)
    if args.text:
        from qrpos.peripherals.pole import as_shown
        from qrpos.present.customer import pole_lines

        rule = "+" + "-" * 20 + "+"
        lines = [f"|{as_shown(line, settings.model)}|" for line in pole_lines(view)]
        print("\n".join([rule, *lines, rule]))
        return EXIT_OK
    from qrpos.peripherals.customer_picture import draw_view
    from qrpos.present.words import words
    from qrpos.said import os_reason

    camera = _synthetic_camera() if args.camera else None
    try:
        draw_view(view, args.size, camera).save(args.png, format="PNG")
    except OSError as exc:
        return fail(t("cli.display.not_written", path=str(args.png), why=words(os_reason(exc))))
    print(t("help.display.written", path=str(args.png)))
    return EXIT_OK


def _test(settings: Any) -> int:
    from qrpos.peripherals.display_port import DisplayTrouble
    from qrpos.peripherals.display_settings import open_display

    sink = open_display(settings)
    if sink is None:
        return fail(t("help.display.no_device"), EXIT_LOCAL_ERROR)
    from qrpos.peripherals.customer_picture import pattern_picture
    from qrpos.peripherals.kms import FramebufferSink
    from qrpos.peripherals.pole import PoleSink, pole_frame

    try:
        if isinstance(sink, PoleSink):
            first, second = t("customer.test.pole1"), t("customer.test.pole2")
            sink.write(pole_frame((first[:20].ljust(20), second[:20].ljust(20)), sink.model))
        elif isinstance(sink, FramebufferSink):
            sink.show_picture(lambda size: pattern_picture(size, t("customer.test.title")))
    except DisplayTrouble as exc:
        return fail(exc)
    finally:
        sink.close()
    print(t("help.display.shown", device=settings.device))
    return EXIT_OK


def _synthetic_camera() -> Any:
    """A phone showing a wallet pass, as the demo's virtual camera draws it."""
    from PIL import Image

    from qrpos.scanner.synthetic import Scene, render_grey

    scene = Scene(payloads=(b"vqr_DEMO0123456789abcdefABCDEF",), noise=0.0, seed=7, angle_deg=4.0)
    return Image.fromarray(render_grey(scene))
