"""The customer's view drawn full-screen, at any size, for a second screen (`kms:`) and
for `qrpos display preview --png`.

Pillow and the bundled DejaVu Sans (`fonts/`, the slips' font: Ө, Ү and ₮ are in it), so
the picture is the same on every Pi whatever fonts the system has. One colour per kind,
readable from across the counter: green with a tick only for paid, red with a cross for
not paid, yellow with "!" for the cashier's check (never the red of a decline). While the
till waits for a code, the camera's live view is drawn beside the amount so the customer
can aim the phone.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image, ImageDraw, ImageFont

from qrpos.present.customer import CustomerView, ViewKind

if TYPE_CHECKING:
    from qrpos.scanner.frames import Frame

FONTS = Path(__file__).with_name("fonts")
RGB = tuple[int, int, int]

#: (background, words, amount) per kind
COLOURS: dict[ViewKind, tuple[RGB, RGB, RGB]] = {
    "idle": ((16, 40, 84), (255, 255, 255), (255, 255, 255)),
    "pay": ((255, 255, 255), (30, 30, 30), (10, 40, 120)),
    "checking": ((32, 32, 40), (255, 204, 0), (255, 255, 255)),
    "paid": ((0, 122, 51), (255, 255, 255), (255, 255, 255)),
    "not_paid": ((176, 24, 24), (255, 255, 255), (255, 255, 255)),
    "check": ((240, 180, 0), (20, 20, 20), (20, 20, 20)),
    "offline": ((64, 64, 64), (220, 220, 220), (220, 220, 220)),
}


@cache
def _font(size: int, bold: bool) -> ImageFont.FreeTypeFont:
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    return ImageFont.truetype(str(FONTS / name), size)


def _fitted(text: str, size: int, bold: bool, room: int) -> ImageFont.FreeTypeFont:
    """The largest font up to `size` in which `text` fits `room` pixels across."""
    while size > 8:
        font = _font(size, bold)
        if font.getlength(text) <= room:
            return font
        size = int(size * 0.9)
    return _font(8, bold)


def _wrapped(text: str, font: ImageFont.FreeTypeFont, room: int) -> list[str]:
    """`text` folded into lines that fit `room` pixels (by words)."""
    average = max(font.getlength("ноabc") / 5, 1.0)
    width = max(int(room / average), 8)
    while width > 8:
        lines = textwrap.wrap(text, width) or [""]
        if all(font.getlength(line) <= room for line in lines):
            return lines
        width -= 2
    return textwrap.wrap(text, 8) or [""]


def draw_view(
    view: CustomerView, size: tuple[int, int], camera: Image.Image | None = None
) -> Image.Image:
    """`view` as an RGB picture of `size` (width, height). With `camera` (any mode) and a
    view that asks for it, the camera's view fills the left of the screen.

    The words are drawn once per view and size (cached): the camera's view, redrawn
    several times a second while the customer aims, is pasted into a copy."""
    if not (view.camera and camera is not None and camera.width and camera.height):
        return _base(view, size, None).copy()  # an empty frame is no camera view
    x, y, w, h = box = _camera_box(size, camera.size)
    image = _base(view, size, box).copy()
    image.paste(camera.convert("RGB").resize((w, h), Image.Resampling.BILINEAR), (x, y))
    ImageDraw.Draw(image).rectangle(
        [x - 2, y - 2, x + w + 1, y + h + 1], outline=(10, 40, 120), width=3
    )
    return image


def _camera_box(size: tuple[int, int], camera: tuple[int, int]) -> tuple[int, int, int, int]:
    """Where the camera's view goes: at the left, as large as the height allows (aspect
    kept): x, y, width, height."""
    width, height = size
    margin = _margin(height)
    scale = min(int(width * 0.45) / camera[0], (height - 2 * margin) / camera[1])
    w, h = max(int(camera[0] * scale), 1), max(int(camera[1] * scale), 1)
    return margin, (height - h) // 2, w, h


def _margin(height: int) -> int:
    return max(height // 20, 4)


@lru_cache(maxsize=8)
def _base(
    view: CustomerView, size: tuple[int, int], box: tuple[int, int, int, int] | None
) -> Image.Image:
    """The view without the camera's pixels (its frame drawn where `box` says)."""
    width, height = size
    background, ink, amount_ink = COLOURS[view.kind]
    image = Image.new("RGB", size, background)
    pen = ImageDraw.Draw(image)
    margin = _margin(height)
    left = margin if box is None else box[0] + box[2] + margin
    room = width - left - margin
    blocks = _layout(view, height, room)
    total = sum(b.height for b in blocks) + margin * (len(blocks) - 1)
    y = max((height - total) // 2, margin)
    for block in blocks:
        if block.font is None:
            _mark(pen, view.kind, left + room // 2, y + block.height // 2, block.height // 2, ink)
        else:
            colour = amount_ink if block.kind == "amount" else ink
            step = int(block.font.size * 1.2)
            for i, line in enumerate(block.lines):
                x = left + (room - block.font.getlength(line)) / 2
                pen.text((x, y + i * step), line, font=block.font, fill=colour)
        y += block.height + margin
    return image


@dataclass(frozen=True)
class _Block:
    """One part of the stack drawn top to bottom (a mark has no font)."""

    kind: str
    font: ImageFont.FreeTypeFont | None
    lines: tuple[str, ...]
    height: int


def _layout(view: CustomerView, height: int, room: int) -> list[_Block]:
    """The stack drawn top to bottom: mark, headline, amount, lines (each with its height)."""
    blocks: list[_Block] = []
    if view.mark != "none":
        blocks.append(_Block("mark", None, (), int(height * 0.2)))
    headline = _fitted(view.headline, int(height * 0.11), True, room)
    blocks.append(_text("headline", [view.headline], headline))
    if view.amount:
        amount = _fitted(view.amount, int(height * 0.2), True, room)
        blocks.append(_text("amount", [view.amount], amount))
    body = _font(max(int(height * 0.065), 8), False)
    lines = [line for text in view.lines for line in _wrapped(text, body, room)]
    if lines:
        blocks.append(_text("lines", lines, body))
    return blocks


def _text(kind: str, lines: list[str], font: ImageFont.FreeTypeFont) -> _Block:
    return _Block(kind, font, tuple(lines), int(font.size * 1.2) * len(lines))


def _mark(pen: ImageDraw.ImageDraw, kind: ViewKind, cx: int, cy: int, r: int, ink: RGB) -> None:
    """A tick (paid), a cross (not paid), a clock (checking), "!" (the cashier checks)."""
    stroke = max(r // 5, 2)
    pen.ellipse([cx - r, cy - r, cx + r, cy + r], outline=ink, width=stroke)
    if kind == "paid":
        pen.line(
            [(cx - r * 0.5, cy), (cx - r * 0.12, cy + r * 0.4), (cx + r * 0.55, cy - r * 0.4)],
            fill=ink,
            width=stroke,
            joint="curve",
        )
    elif kind == "not_paid":
        d = r * 0.4
        pen.line([(cx - d, cy - d), (cx + d, cy + d)], fill=ink, width=stroke)
        pen.line([(cx - d, cy + d), (cx + d, cy - d)], fill=ink, width=stroke)
    elif kind == "checking":
        pen.line([(cx, cy), (cx, cy - r * 0.6)], fill=ink, width=stroke)
        pen.line([(cx, cy), (cx + r * 0.45, cy)], fill=ink, width=stroke)
    else:
        pen.line([(cx, cy - r * 0.55), (cx, cy + r * 0.15)], fill=ink, width=stroke)
        dot = stroke * 0.7
        pen.ellipse([cx - dot, cy + r * 0.45 - dot, cx + dot, cy + r * 0.45 + dot], fill=ink)


def pattern_picture(size: tuple[int, int], title: str) -> Image.Image:
    """Colour bars, a one-pixel grid at the edges (the screen's whole area shows) and the
    title with Ө, Ү and ₮: what `qrpos display test` puts on a screen."""
    width, height = size
    image = Image.new("RGB", size, (0, 0, 0))
    pen = ImageDraw.Draw(image)
    bars = [colours[0] for colours in COLOURS.values()]
    step = width / len(bars)
    for i, colour in enumerate(bars):
        pen.rectangle([int(i * step), 0, int((i + 1) * step), height // 2], fill=colour)
    pen.rectangle([0, 0, width - 1, height - 1], outline=(255, 255, 255), width=1)
    text = f"{title} · ӨөҮү ₮ · {width}×{height}"
    font = _fitted(text, height // 10, True, width - 20)
    pen.text(((width - font.getlength(text)) / 2, height * 0.65), text, font=font, fill="white")
    return image


def camera_picture(frame: Frame | None) -> Image.Image | None:
    """A camera frame (the scan loop's greyscale numpy array) as a picture; None for none."""
    if frame is None:
        return None
    return Image.fromarray(frame)
