"""A pole display over a pseudo-terminal: the exact bytes of every state in both command
sets and both languages (goldens, plus literal frames read by hand), the code page's
fallbacks, and a display unplugged mid-queue that shows the newest state once it is back.
`QRPOS_UPDATE_GOLDENS=1` rewrites golden_pole.json."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from virtual_pole import VirtualPole

from qrpos.peripherals.display_port import CustomerDisplay, DisplayTrouble
from qrpos.peripherals.pole import PoleModel, PoleSink, as_shown, encode_line, view_frame
from qrpos.present import i18n
from qrpos.present.customer import (
    REASON_OUTCOMES,
    VIEW_KINDS,
    CustomerView,
    pole_lines,
    preview_view,
)

GOLDEN = Path(__file__).with_name("golden_pole.json")
UPDATE = os.environ.get("QRPOS_UPDATE_GOLDENS") == "1"
MODELS = {
    "escpos": PoleModel("escpos", "pc866", udc=True),
    "escpos-noudc": PoleModel("escpos", "pc866", udc=False),
    "cd5220": PoleModel("cd5220", "pc866", udc=False),
}


@pytest.fixture
def speaking() -> Iterator[None]:
    was = i18n.current_language()
    yield
    i18n.set_language(was)


def states() -> dict[str, CustomerView]:
    """Every state the display shows, in the current language."""
    out: dict[str, CustomerView] = {}
    for kind in VIEW_KINDS:
        if kind == "not_paid":
            for reason in REASON_OUTCOMES:
                out[f"not_paid_{reason}"] = preview_view(kind, reason=reason)
        else:
            out[kind] = preview_view(kind, shop="Цайны газар №3" if kind == "idle" else "")
    return out


def test_every_state_in_both_protocols_and_languages_reaches_the_display_exactly(
    tmp_path: Path, speaking: None
) -> None:
    pole = VirtualPole(tmp_path / "ttyPOLE")
    golden: dict[str, str] = {} if UPDATE else json.loads(GOLDEN.read_text())
    seen: dict[str, str] = {}
    try:
        for model_name, model in MODELS.items():
            sink = PoleSink(str(pole.path), 9600, model)
            for lang in ("mn", "en"):
                i18n.set_language(lang)
                for name, view in states().items():
                    before = len(pole.frames())
                    sink.show(view)
                    pole.until(lambda before=before: len(pole.frames()) == before + 1)
                    seen[f"{model_name}-{lang}-{name}"] = pole.frames()[-1].hex()
            sink.close()
    finally:
        pole.unplug()
    if UPDATE:
        GOLDEN.write_text(json.dumps(seen, indent=1, sort_keys=True) + "\n")
        golden = seen
    assert seen == golden
    assert len(seen) == len(MODELS) * 2 * (len(VIEW_KINDS) - 1 + len(REASON_OUTCOMES))


def test_an_escpos_frame_byte_by_byte(speaking: None) -> None:
    i18n.set_language("en")
    frame = view_frame(preview_view("paid"), PoleModel("escpos", "pc866", udc=False))
    assert frame == (
        b"\x1b@\x1bt\x11"  # init, code table 17 (PC866)
        b"\x0c"  # clear
        b"\x1f$\x01\x01PAID        12,500 T"  # line 1 (₮ -> T: PC866 has no ₮)
        b"\x1f$\x01\x02Thank you!          "
    )


def test_a_cd5220_frame_byte_by_byte(speaking: None) -> None:
    i18n.set_language("en")
    frame = view_frame(preview_view("pay"), PoleModel("cd5220", "pc866", udc=False))
    assert frame == (b"\x1b@\x1bt\x07\x0c\x1bQAPay         12,500 T\r\x1bQBShow QR to camera   \r")


def test_mongolian_letters_a_code_page_lacks() -> None:
    udc = PoleModel("escpos", "pc866", udc=True)
    plain = PoleModel("escpos", "pc866", udc=False)
    cd5220 = PoleModel("cd5220", "pc866", udc=True)  # CD5220 takes no user characters
    # Ө ө Ү ү ₮ as the user-defined codes 0x5B..0x5F
    assert encode_line("ТӨЛӨХ ₮", udc) == b"\x92\x5b\x8b\x5b\x95 \x5f"  # Т Ө Л Ө Х ₮
    assert encode_line("ТӨЛӨХ ₮", plain) == "ТОЛОХ T".encode("cp866")
    assert encode_line("үзүүлнэ", cd5220) == "узуулнэ".encode("cp866")
    assert encode_line("a[b]", udc) == b"a-b-"  # a bracket would show a Mongolian letter
    assert encode_line("日", plain) == b"?"


def test_the_user_defined_letters_are_defined_before_they_are_used(speaking: None) -> None:
    i18n.set_language("mn")
    frame = view_frame(preview_view("paid"), PoleModel("escpos", "pc866", udc=True))
    define = frame.index(b"\x1b&\x01\x5b\x5f")
    select = frame.index(b"\x1b%\x01")
    clear = frame.index(b"\x0c")
    assert define < select < clear < frame.index(b"\x5b", clear)  # Ө used after the set
    # Ө: a ring with a bar, five columns of seven dots (top dot in the high bit)
    assert frame[define + 5 : define + 11] == bytes([5, 0x7C, 0x92, 0x92, 0x92, 0x7C])


def test_an_unplugged_display_shows_the_newest_state_once_it_is_back(
    tmp_path: Path, speaking: None
) -> None:
    i18n.set_language("mn")
    pole = VirtualPole(tmp_path / "ttyPOLE")
    model = MODELS["escpos"]
    display = CustomerDisplay(PoleSink(str(pole.path), 9600, model), retry_s=0.05)
    states_seen: list[str] = []
    display.on_state = lambda state, why: states_seen.append(state)
    display.start()
    try:
        queue = [preview_view("pay", amount=1000 * (i + 1)) for i in range(8)]
        display.show(queue[0])
        pole.until(lambda: pole.frames() == [view_frame(queue[0], model)])
        pole.unplug()  # mid-queue: the next sales go on without it
        for view in queue[1:]:
            display.show(view)
        pole.until(lambda: display.state == "attention")
        assert display.trouble is not None and display.trouble.key == "display.open"
        pole.plug()
        newest = view_frame(queue[-1], model)
        pole.until(lambda: bool(pole.frames()) and pole.frames()[-1] == newest)
        pole.until(lambda: display.state == "ready")
        assert states_seen == ["attention", "ready"]
        # nothing older reached the display after the newest
        assert pole.frames()[-1] == newest and not display.waiting
    finally:
        display.stop(farewell=False)
        pole.unplug()


def test_the_port_is_held_between_updates_and_opened_again_when_it_fails(
    tmp_path: Path, speaking: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 49: the sink opened the port (a dozen system calls, each a hand-off of the
    interpreter's lock to a worker thread the busy kiosk keeps waiting) for every update,
    the tail of the customer display's latency. It holds the port now; a display
    unplugged and plugged back in between two updates (a new device behind the link)
    still shows the next one at once, and one that is gone is said as trouble."""
    import serial

    opened: list[str] = []

    class Counted(serial.Serial):  # type: ignore[misc]  # pyserial is untyped
        def __init__(self, port: str, *args: object, **kwargs: object) -> None:
            opened.append(port)
            super().__init__(port, *args, **kwargs)

    monkeypatch.setattr(serial, "Serial", Counted)
    i18n.set_language("mn")
    model = MODELS["escpos"]
    pole = VirtualPole(tmp_path / "ttyPOLE")
    sink = PoleSink(str(pole.path), 9600, model)
    try:
        queue = [preview_view("pay", amount=1000 * (i + 1)) for i in range(6)]
        for view in queue[:5]:
            sink.show(view)
        pole.until(lambda: len(pole.frames()) == 5)
        assert pole.frames() == [view_frame(view, model) for view in queue[:5]]
        assert len(opened) == 1
        pole.unplug()
        pole.plug()  # the same display back, a new pseudo-terminal behind the link
        sink.show(queue[5])  # the old port fails: opened again, no trouble
        newest = view_frame(queue[5], model)
        pole.until(lambda: len(pole.frames()) == 6 and pole.frames()[-1] == newest)
        assert len(opened) == 2
        pole.unplug()
        with pytest.raises(DisplayTrouble) as trouble:
            sink.show(queue[0])
        assert trouble.value.said.key == "display.open"
    finally:
        sink.close()
        sink.close()  # safe twice
        pole.unplug()
    # `qrpos display test` and `qrpos doctor` write once: nothing is held after
    pole.plug()
    try:
        opened.clear()
        for _ in range(2):
            PoleSink(str(pole.path), 9600, model).write(b"x")
        pole.until(lambda: pole.received.endswith(b"xx"))
        assert len(opened) == 2
    finally:
        pole.unplug()


def test_stopping_the_till_says_the_display_is_not_connected(
    tmp_path: Path, speaking: None
) -> None:
    i18n.set_language("en")
    pole = VirtualPole(tmp_path / "ttyPOLE")
    display = CustomerDisplay(PoleSink(str(pole.path), 9600, MODELS["cd5220"]), retry_s=0.05)
    display.start()
    try:
        display.show(preview_view("idle"))
        pole.until(lambda: len(pole.frames()) == 1)
        display.stop()
        pole.until(lambda: len(pole.frames()) == 2)
        last = pole.frames()[-1]
        assert b"Display not" in last and b"connected to till" in last
    finally:
        pole.unplug()


@pytest.mark.parametrize("model", [PoleModel("escpos"), PoleModel("cd5220", udc=False)])
def test_a_control_character_in_the_text_is_never_a_command(model: PoleModel) -> None:
    """The shop's name is the installer's text, sent in every idle frame: its ESC @ (reset),
    FF (clear), US (cursor), CR (the end of a CD5220 line) or a C1 code reached the pole
    display raw and were obeyed. Each is shown as "?" now; the frame's only commands are
    its own."""
    hostile = "Cafe\x1b@\x0c\x1f$\x01\x02\r\x9b2J\u200e\u2028X"
    view = preview_view("idle", shop=hostile)
    frame = view_frame(view, model)
    clean = view_frame(preview_view("idle", shop="Cafe?@??$????2J??X"), model)
    assert frame == clean
    for line in pole_lines(view):
        assert all(b >= 0x20 for b in encode_line(line, model))
        assert as_shown(line, model).isprintable()
