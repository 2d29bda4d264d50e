"""A handheld scanner: a recorded keyboard-wedge stream of 50 tokens yields exactly those
50, whatever the console's layout; a serial scanner (a real pty opened by pyserial) hands
over its bytes unchanged; each scan goes through the camera's token rules."""

from __future__ import annotations

import io
import os
import random
import string
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qrpos.scanner import ScanLoop
from qrpos.scanner.events import ScanEvent, ScanRefused, TokenRead
from qrpos.scanner.handheld import (
    EV_KEY,
    EVENT,
    KEY_CAPSLOCK,
    KEY_ENTER,
    KEY_LEFTSHIFT,
    KEY_RIGHTSHIFT,
    KEY_TAB,
    UNREADABLE,
    HandheldReader,
    KeyDecoder,
    events_of_text,
    keyboards,
    read_events,
)
from qrpos.scanner.tokens import RefusalCode
from qrpos.scanner.virtual import VirtualPhone

#: what a wallet token is made of in the sandbox and in the field (URL-safe base64)
TOKEN_ALPHABET = string.ascii_letters + string.digits + "-_"


def tokens(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return ["vqr_" + "".join(rng.choices(TOKEN_ALPHABET, k=rng.randint(20, 60))) for _ in range(n)]


def decode_all(stream: bytes) -> list[bytes]:
    decoder = KeyDecoder()
    out = []
    for type_, code, value in read_events(io.BytesIO(stream)):
        scan = decoder.feed(type_, code, value, now=0.0)
        if scan is not None:
            out.append(scan)
    return out


def test_a_recorded_stream_of_50_tokens_yields_exactly_those_50(tmp_path: Path) -> None:
    """Every letter of a token sits on a key a Mongolian layout types as Cyrillic (Q is Ф,
    W is Ц, …): read by key code, the bytes are the token's own."""
    wanted = tokens(50)
    assert all(any(c.isalpha() for c in t[4:]) for t in wanted)
    recording = tmp_path / "wedge.events"
    recording.write_bytes(b"".join(events_of_text(t) for t in wanted))
    got: list[bytes] = []
    reader = HandheldReader(f"evdev:{recording}", got.append, retry_s=60)
    reader.start()
    deadline = time.monotonic() + 10
    while len(got) < 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    reader.stop()
    assert [g.decode("ascii") for g in got] == wanted
    assert not reader.grabbed  # a file cannot be held alone; a real device is (EVIOCGRAB)


@given(st.text(alphabet=string.printable.strip() + " ", min_size=1, max_size=80))
def test_any_printable_ascii_is_typed_back_exactly(text: str) -> None:
    assert decode_all(events_of_text(text)) == [text.encode("ascii")]


def test_shift_either_side_and_caps_lock_are_followed() -> None:
    def press(code: int) -> list[tuple[int, int, int]]:
        return [(EV_KEY, code, 1), (EV_KEY, code, 0)]

    events = [
        *press(47),  # v
        (EV_KEY, KEY_RIGHTSHIFT, 1), *press(16), (EV_KEY, KEY_RIGHTSHIFT, 0),  # Q
        *press(KEY_CAPSLOCK), *press(19), *press(2),  # R (caps), 1 (caps leaves digits)
        (EV_KEY, KEY_LEFTSHIFT, 1), *press(19), (EV_KEY, KEY_LEFTSHIFT, 0),  # r: shift+caps
        *press(KEY_CAPSLOCK), *press(12), *press(KEY_TAB),  # -, then Tab ends it
    ]  # fmt: skip
    decoder = KeyDecoder()
    scans = [s for e in events if (s := decoder.feed(*e, now=0.0)) is not None]
    assert scans == [b"vQR1r-"]


def test_a_key_no_layout_types_makes_the_scan_unreadable_not_shorter() -> None:
    decoder = KeyDecoder()
    for code in (47, 16, 19, 59):  # v q r F1
        decoder.feed(EV_KEY, code, 1, now=0.0)
    assert decoder.feed(EV_KEY, KEY_ENTER, 1, now=0.0) == b"vqr" + UNREADABLE


def test_a_scan_that_lost_its_enter_is_not_glued_to_the_next() -> None:
    decoder = KeyDecoder(stale_s=1.0)
    for code in (47, 16, 19):
        decoder.feed(EV_KEY, code, 1, now=10.0)
    for t, code in enumerate((47, 16, 19, 12), start=12):
        decoder.feed(EV_KEY, code, 1, now=float(t) / 10 + 11.0)
    assert decoder.feed(EV_KEY, KEY_ENTER, 1, now=11.5) == b"vqr-"


def test_a_partial_event_at_the_end_is_not_a_key() -> None:
    stream = events_of_text("vqr_a") + EVENT.pack(0, 0, EV_KEY, 30, 1)[:10]
    assert decode_all(stream) == [b"vqr_a"]


def test_a_serial_scanner_hands_over_its_bytes_unchanged() -> None:
    """pyserial opens a real pseudo-terminal, as it opens /dev/ttyACM0."""
    master, slave = os.openpty()
    got: list[bytes] = []
    reader = HandheldReader(f"serial:{os.ttyname(slave)}@115200", got.append, retry_s=60)
    reader.start()
    try:
        deadline = time.monotonic() + 5
        while reader.state != "ready" and time.monotonic() < deadline:
            time.sleep(0.01)
        sent = [t.encode() for t in tokens(5)] + [b"vqr_caf\xc3\xa9", b"vqr_\xff\xfe"]
        os.write(master, b"".join(s + b"\r\n" for s in sent))
        while len(got) < len(sent) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        reader.stop()
        os.close(master)
        os.close(slave)
    assert got == sent


def test_a_missing_device_is_unavailable_and_never_raises(tmp_path: Path) -> None:
    reader = HandheldReader(f"evdev:{tmp_path / 'event99'}", lambda raw: None, retry_s=0.05)
    reader.start()
    time.sleep(0.3)
    reader.stop()
    assert reader.trouble is not None and "No such file" in reader.trouble


@pytest.mark.parametrize("setting", ["usb:1234", "evdev:", "serial:/dev/ttyACM0@fast", "x"])
def test_a_setting_that_names_no_scanner_is_refused(setting: str) -> None:
    with pytest.raises(ValueError, match="handheld"):
        HandheldReader(setting, lambda raw: None)


PROC_DEVICES = """\
I: Bus=0019 Vendor=0000 Product=0001 Version=0000
N: Name="Power Button"
H: Handlers=kbd event0

I: Bus=0003 Vendor=0c2e Product=0b61 Version=0111
N: Name="Honeywell Imaging & Mobility 1900G"
H: Handlers=sysrq kbd leds event3

I: Bus=0003 Vendor=046d Product=c31c Version=0110
N: Name="Logitech USB Keyboard"
H: Handlers=sysrq kbd leds event4

I: Bus=0003 Vendor=046d Product=c077 Version=0111
N: Name="Logitech USB Optical Mouse"
H: Handlers=mouse0 event5
"""


def test_doctor_can_tell_a_scanner_among_the_keyboards() -> None:
    found = keyboards(PROC_DEVICES)
    assert [d.event for d in found] == ["event0", "event3", "event4"]
    scanners = [d for d in found if d.looks_like_a_scanner]
    assert [(d.path, d.vendor) for d in scanners] == [("/dev/input/event3", "0c2e")]


# --- through the scan loop: the camera's rules ---------------------------------------


class Events:
    def __init__(self) -> None:
        self.seen: list[ScanEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: ScanEvent) -> None:
        with self.lock:
            self.seen.append(event)

    def reads(self) -> list[ScanEvent]:
        return [e for e in self.seen if isinstance(e, TokenRead | ScanRefused)]


def loop() -> tuple[ScanLoop, Events]:
    events = Events()
    return ScanLoop(VirtualPhone(), _NoDecoder(), events), events


class _NoDecoder:
    name = "none"

    def decode(self, frame: object) -> list[bytes]:
        return []


def test_a_handheld_token_is_handed_over_once_per_arming() -> None:
    scan, events = loop()
    token = tokens(1)[0]
    scan.handle_scan(token.encode())  # not armed: ignored, as a phone shown then is
    scan.arm()
    scan.handle_scan(token.encode())
    scan.handle_scan(token.encode())  # a second pull while the sale runs: nothing more
    assert events.reads() == [TokenRead(token)]


def test_a_handheld_scan_goes_through_the_token_rules() -> None:
    scan, events = loop()
    paid = tokens(1)[0]
    scan.arm()
    scan.handle_scan(paid.encode())
    scan.mark_sale_ended(charged=True)
    scan.arm()
    scan.handle_scan(paid.encode())  # the code that has just paid
    scan.handle_scan(b"https://example.com/pay")
    scan.handle_scan(b"vqr_" + UNREADABLE)
    codes = [e.code for e in events.reads() if isinstance(e, ScanRefused)]
    assert codes == [RefusalCode.SPENT, RefusalCode.URL, RefusalCode.INVALID_UTF8]
    # a scan after a decline is a new presentation (no "left in view" for a trigger)
    scan.handle_scan(b"vqr_fresh0001")
    assert events.reads()[-1] == TokenRead("vqr_fresh0001")


def test_doctor_says_where_the_handheld_stands(tmp_path: Path) -> None:
    from qrpos.doctor import Status, check_handheld

    none = check_handheld({}, proc_devices="")
    assert none.status is Status.SKIP
    found = check_handheld({}, proc_devices=PROC_DEVICES)
    assert found.status is Status.SKIP and "Honeywell" in found.detail
    assert found.fix is not None and "evdev:/dev/input/event3" in found.fix
    assert check_handheld({"handheld": "usb:1"}).status is Status.FAIL
    gone = check_handheld({"handheld": f"evdev:{tmp_path / 'event9'}"})
    assert gone.status is Status.FAIL and gone.fix
    there = tmp_path / "ttyACM0"
    there.write_bytes(b"")
    assert check_handheld({"handheld": f"serial:{there}@9600"}).status is Status.OK
