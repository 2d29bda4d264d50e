"""The customer display's pictures against goldens: every state, 800×480 and 1920×1080,
Mongolian and English (Ө, Ү and ₮ drawn in the bundled font), the camera view beside the
amount. A state with no golden fails. `QRPOS_UPDATE_GOLDENS=1` writes them anew (look at
each before committing: `git diff --stat` shows which changed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pictures import LANGUAGES, SIZES, draw, picture_states
from PIL import Image, ImageChops

from qrpos.peripherals.customer_picture import pattern_picture
from qrpos.present import i18n
from qrpos.present.customer import REASON_OUTCOMES, VIEW_KINDS

GOLDENS = Path(__file__).with_name("goldens")
UPDATE = os.environ.get("QRPOS_UPDATE_GOLDENS") == "1"


@pytest.fixture
def speaking() -> Iterator[None]:
    was = i18n.current_language()
    yield
    i18n.set_language(was)


def golden_path(lang: str, name: str, size: tuple[int, int]) -> Path:
    return GOLDENS / f"{lang}-{name}-{size[0]}x{size[1]}.png"


def all_cases() -> list[tuple[str, str, tuple[int, int]]]:
    names = list(picture_states())
    return [(lang, name, size) for lang in LANGUAGES for name in names for size in SIZES]


def test_every_state_has_a_picture_in_both_languages_and_sizes() -> None:
    names = set(picture_states())
    kinds = {k for k in VIEW_KINDS if k != "not_paid"}
    assert kinds | {f"not_paid_{r}" for r in REASON_OUTCOMES} | {"pay_camera"} == names
    missing = [golden_path(*case).name for case in all_cases() if not golden_path(*case).exists()]
    assert not missing or UPDATE, f"no golden picture for {missing}"
    stray = {p.name for p in GOLDENS.glob("*.png")} - {golden_path(*c).name for c in all_cases()}
    assert not stray, f"goldens of states that no longer exist: {stray}"


@pytest.mark.parametrize(("lang", "name", "size"), all_cases())
def test_the_picture_is_the_golden(
    lang: str, name: str, size: tuple[int, int], speaking: None, tmp_path: Path
) -> None:
    i18n.set_language(lang)
    picture = draw(name, size)
    assert picture.size == size and picture.mode == "RGB"
    path = golden_path(lang, name, size)
    if UPDATE:
        GOLDENS.mkdir(exist_ok=True)
        picture.save(path, optimize=True)
    with Image.open(path) as golden:
        differs = ImageChops.difference(golden.convert("RGB"), picture).getbbox()
    if differs is not None:
        picture.save(tmp_path / path.name)
    assert differs is None, f"{path.name} differs in {differs}: see {tmp_path / path.name}"


def test_the_words_drawn_differ_between_the_languages(speaking: None) -> None:
    """A picture in Mongolian is not the English one with the same pixels (a missing
    font or catalogue would draw both alike)."""
    i18n.set_language("mn")
    mn = draw("paid", (800, 480))
    i18n.set_language("en")
    en = draw("paid", (800, 480))
    assert ImageChops.difference(mn, en).getbbox() is not None


def test_the_test_pattern_fills_any_screen() -> None:
    for size in ((320, 240), (800, 480), (1024, 600), (1920, 1080)):
        picture = pattern_picture(size, "test")
        assert picture.size == size
        assert picture.getpixel((0, 0)) == (255, 255, 255)  # the edge: the whole area shows


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr is not installed")
@pytest.mark.parametrize(
    ("lang", "name", "expect"),
    [
        ("mn", "paid", ["Төлбөр амжилттай", "12,500"]),
        ("mn", "pay_camera", ["Төлөх", "12,500"]),
        ("en", "not_paid_no_money", ["Not paid", "Not enough money"]),
        ("en", "check", ["cashier will check", "12,500"]),
    ],
)
def test_a_reader_reads_the_golden_back(
    lang: str, name: str, expect: list[str], tmp_path: Path
) -> None:
    """OCR (tesseract) reads the words back from the 1920×1080 golden: drawn legibly."""
    ocr_lang = {"mn": "mon", "en": "eng"}[lang]
    langs = subprocess.run(
        ["tesseract", "--list-langs"], capture_output=True, text=True, check=False
    ).stdout.split()
    if ocr_lang not in langs:
        pytest.skip(f"tesseract has no {ocr_lang} data")
    # the ink as black on white, whatever the colours (OCR reads dark text on light best)
    with Image.open(golden_path(lang, name, (1920, 1080))) as golden:
        picture = golden.convert("RGB")
    background = Image.new("RGB", picture.size, picture.getpixel((2, 2)))
    ink = ImageChops.difference(picture, background).convert("L")
    page = ink.point(lambda v: 0 if v > 60 else 255)
    page.save(tmp_path / "page.png")
    read = subprocess.run(
        ["tesseract", str(tmp_path / "page.png"), "-", "-l", ocr_lang],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    for words in expect:
        assert words.lower() in read.lower(), read
