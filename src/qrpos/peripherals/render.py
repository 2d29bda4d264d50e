"""A slip drawn as the printer prints it: a 1-bit raster in the bundled font, then ESC/POS.

Few receipt printers' code pages hold Mongolian Cyrillic's Ө and Ү (CP866 and CP1251
have neither; the printers that do, do it each in their own way). So every slip is drawn
here as an image, in DejaVu Sans (bundled: `fonts/`, Bitstream Vera licence), and sent as
an ESC/POS raster (`GS v 0`), which every ESC/POS printer prints the same: what the PNG
preview shows is what the paper shows. 58 mm paper is 384 dots wide at 203 dpi, 80 mm is
576.

The bytes come from python-escpos (its `Dummy` printer collects them), so the transports
(USB, serial, network, a file) all receive the same bytes; tests pin them (golden).
"""

from __future__ import annotations

import copy
import io
from functools import cache
from pathlib import Path

from escpos.printer import Dummy
from PIL import Image, ImageDraw, ImageFont

from qrpos.peripherals.slip import Slip, SlipLine

FONTS = Path(__file__).with_name("fonts")
#: printable dots across the paper (203 dpi heads)
PAPER_DOTS = {58: 384, 80: 576}
#: text size in dots per style, and the bold face for which
_SIZES = {"small": 18, "normal": 22, "bold": 22, "big": 40}
_MARGIN = 4
_GAP = 4


@cache
def _font(size: int, bold: bool) -> ImageFont.FreeTypeFont:
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    return ImageFont.truetype(str(FONTS / name), size)


def _fit(text: str, font: ImageFont.FreeTypeFont, room: float) -> str:
    """`text` cut with "…" to fit `room` dots (an id never wraps into the next line)."""
    if font.getlength(text) <= room:
        return text
    while text and font.getlength(text + "…") > room:
        text = text[:-1]
    return text + "…"


def draw(slip: Slip, paper_mm: int = 58) -> Image.Image:
    """The slip as a 1-bit image exactly as wide as the paper's printable dots."""
    width = PAPER_DOTS.get(paper_mm, PAPER_DOTS[58])
    room = width - 2 * _MARGIN
    heights = [_height(line) for line in slip.lines]
    image = Image.new("1", (width, sum(heights) + 2 * _MARGIN + 24), 1)
    pen = ImageDraw.Draw(image)
    y = _MARGIN
    for line, height in zip(slip.lines, heights, strict=True):
        if line.rule:
            pen.line([(_MARGIN, y + height // 2), (width - _MARGIN, y + height // 2)], fill=0)
        else:
            _text_line(pen, line, y, width, room)
        y += height
    return image


def _height(line: SlipLine) -> int:
    if line.rule:
        return 12
    return _SIZES[line.style] + _GAP + (2 if line.style == "big" else 0)


def _text_line(pen: ImageDraw.ImageDraw, line: SlipLine, y: int, width: int, room: int) -> None:
    font = _font(_SIZES[line.style], line.style in ("bold", "big"))
    if line.right:
        right = _fit(line.right, font, room * 0.7)
        right_w = font.getlength(right)
        pen.text((width - _MARGIN - right_w, y), right, font=font, fill=0)
        left = _fit(line.text, font, room - right_w - 8)
        pen.text((_MARGIN, y), left, font=font, fill=0)
        return
    text = _fit(line.text, font, room)
    text_w = font.getlength(text)
    if line.align == "center":
        x = (width - text_w) / 2
    elif line.align == "right":
        x = width - _MARGIN - text_w
    else:
        x = _MARGIN
    pen.text((x, y), text, font=font, fill=0)


def escpos_bytes(slip: Slip, paper_mm: int = 58) -> bytes:
    """The bytes a printer is sent for `slip`: reset, the raster, a feed and a cut."""
    printer = Dummy()
    # the printable width, so python-escpos checks the raster against it (a copy: the
    # profile's data is shared between printers)
    profile = copy.deepcopy(printer.profile.profile_data)
    profile["media"]["width"]["pixels"] = PAPER_DOTS.get(paper_mm, PAPER_DOTS[58])
    printer.profile.profile_data = profile
    printer.hw("INIT")
    printer.image(draw(slip, paper_mm), impl="bitImageRaster", center=False)
    printer.ln(3)
    printer.cut()
    return bytes(printer.output)


def png_bytes(slip: Slip, paper_mm: int = 58) -> bytes:
    """The slip as a PNG, for a person to look at without a printer."""
    out = io.BytesIO()
    draw(slip, paper_mm).save(out, format="PNG")
    return out.getvalue()
