"""The receipt printer: what each slip prints (golden bytes), the Cyrillic it needs, the
ports, and the durable queue through a printer that is off, unplugged or out of paper.

The network printer here is a real TCP server on loopback that speaks the part of ESC/POS
a printer answers (DLE EOT 4, the paper sensor) and keeps what it was sent; the queue
runs over a real SQLite outbox."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageFont

from qrpos import spec
from qrpos.doctor import Status, check_printer
from qrpos.ledger import Ledger
from qrpos.ledger.prints import queue_slip, recent_slips, slip_counts
from qrpos.peripherals.printer import (
    EscposPort,
    FilePort,
    PrinterSettingError,
    PrinterTrouble,
    open_port,
)
from qrpos.peripherals.printing import Printing, PrintSettings, print_settings, wait_until
from qrpos.peripherals.render import FONTS, PAPER_DOTS, draw, escpos_bytes, png_bytes
from qrpos.peripherals.slip import (
    Slip,
    SlipLine,
    end_of_day_slip,
    printer_test_slip,
    refund_slip,
    sale_slip,
    z_slip,
)
from qrpos.present.i18n import set_language
from qrpos.reports.endofday import EndOfDay
from qrpos.said import say
from qrpos.service.models import Transaction

GOLDEN = Path(__file__).with_name("golden_slips.json")
AT = datetime(2026, 11, 24, 4, 5, 6, tzinfo=UTC)  # 12:05:06 in Ulaanbaatar
HEADER = ("Өглөөний Цай ХХК", "Улаанбаатар, СБД 1-р хороо")


def tx(
    n: int = 1, *, amount: int = 12_500, receipt: str = "", status: str = "pending"
) -> Transaction:
    return Transaction(
        id=f"tx_01JH{n:022d}",
        amount_mnt=amount,
        status=spec.TxStatus.COMPLETED,
        type=spec.TxType.CHARGE,
        vat_receipt_id=receipt,
        vat_status=spec.VatStatus(status),
        terminal_id="ter_canteen01",
        created_at_text="2026-11-24T04:05:06.123456Z",
    )


def eod(*, clean: bool = True) -> EndOfDay:
    return EndOfDay(
        day=date(2026, 11, 24),
        from_utc=datetime(2026, 11, 23, 16, tzinfo=UTC),
        to_utc=datetime(2026, 11, 24, 16, tzinfo=UTC),
        charges_count=143,
        gross_mnt=1_787_500,
        reversed_count=2,
        reversed_mnt=25_000,
        vat_pending=3,
        vat_issued=140,
        vat_voided=2,
        hourly=(),
    )


#: a Z as `take_z` writes it: a sale left open, a correction to an earlier Z
Z_REPORT = {
    "z_number": 7, "shift": 9, "cashier": "Бат-Эрдэнэ", "opened_at": "2026-11-24T01:00:00Z",
    "closed_at": "2026-11-24T09:30:00Z", "closed_by": "cashier", "sales": 143,
    "sales_mnt": 1_787_500, "reversed": 2, "reversed_mnt": 25_000, "not_charged": 3,
    "refunds_made": 1, "refunds_made_mnt": 12_500, "refunds_pending": 0, "in_review": [],
    "unsettled": [{"intent": 812, "amount_mnt": 4_500, "state": "unresolved",
                   "created_at": "2026-11-24T09:29:00Z"}],
    "corrections": [{"intent": 640, "of_z": 6, "outcome": "sale", "amount_mnt": 12_500,
                     "state": "charged_per_history"}],
    "reconciliation": None,
}  # fmt: skip


def slips() -> dict[str, Slip]:
    """Every kind of slip, in the language set now."""
    return {
        "sale": sale_slip(tx(), header=HEADER),
        "reprint": sale_slip(
            tx(receipt="DDTD-2026-000123", status="issued"), header=HEADER, reprint_at=AT
        ),
        "refund": refund_slip(tx(), AT, header=HEADER),
        "end_of_day": end_of_day_slip(eod(), printed_at=AT, header=HEADER),
        "test": printer_test_slip(AT, header=HEADER),
        "z": z_slip(Z_REPORT, header=HEADER),
    }


@pytest.fixture(autouse=True)
def mongolian() -> Iterator[None]:
    set_language("mn")
    yield
    set_language("mn")


# --- what a slip says -------------------------------------------------------------------


def test_a_sale_slip_says_amount_time_id_and_pending_receipt() -> None:
    set_language("en")
    text = sale_slip(tx(), header=HEADER).plain()
    assert "12,500 ₮" in text or "12 500 ₮" in text or "12500 ₮" in text
    assert "2026-11-24 12:05:06" in text  # UTC+8, the shop's time
    assert tx().id in text
    assert "VAT receipt (ДДТД)" in text and "pending" in text
    assert "Copy" not in text


def test_a_reprint_carries_the_issued_receipt_and_says_it_is_a_copy() -> None:
    set_language("en")
    text = slips()["reprint"].plain()
    assert "DDTD-2026-000123" in text and "pending" not in text
    assert "Copy, printed 2026-11-24 12:05:06" in text


def test_slips_speak_mongolian() -> None:
    text = slips()["sale"].plain()
    assert ("ДДТД" in text and "Терминал" in text) or "Касс" in text
    assert "Өглөөний Цай ХХК" in text


def test_an_end_of_day_slip_adds_up_and_names_differences() -> None:
    set_language("en")
    text = end_of_day_slip(eod(), printed_at=AT).plain()
    assert "143 sales" in text and "2 refunds" in text
    assert "1,762,500" in text.replace(" ", ",") or "1762500" in text
    assert "Differences" not in text


def test_a_slip_survives_its_queue_row() -> None:
    for slip in slips().values():
        assert Slip.from_json(slip.to_json()) == slip


# --- what a slip prints -----------------------------------------------------------------


@pytest.mark.parametrize("language", ["mn", "en"])
@pytest.mark.parametrize("paper", [58, 80])
def test_slip_bytes_are_golden(language: str, paper: int, tmp_path: Path) -> None:
    """The bytes each slip sends, pinned: a change to a slip's words, layout, font or the
    ESC/POS framing shows here. After a deliberate change, look at the previews written
    to the failure's folder, then rewrite the file: QRPOS_UPDATE_GOLDEN=1 pytest -k golden."""
    set_language(language)
    golden: dict[str, str] = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    found = {}
    for name, slip in slips().items():
        found[f"{language}-{paper}-{name}"] = hashlib.sha256(escpos_bytes(slip, paper)).hexdigest()
        (tmp_path / f"{language}-{paper}-{name}.png").write_bytes(png_bytes(slip, paper))
    if os.environ.get("QRPOS_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps({**golden, **found}, indent=1, sort_keys=True) + "\n")
        return
    wrong = {k: v for k, v in found.items() if golden.get(k) != v}
    assert not wrong, f"slips changed (previews in {tmp_path}): {sorted(wrong)}"


@pytest.mark.parametrize("paper", [58, 80])
def test_slip_bytes_are_one_raster_as_wide_as_the_paper(paper: int) -> None:
    data = escpos_bytes(slips()["sale"], paper)
    assert data.startswith(b"\x1b@")  # ESC @: the printer starts from its defaults
    raster = data.index(b"\x1dv0\x00")  # GS v 0: one raster image, normal density
    width_bytes = int.from_bytes(data[raster + 4 : raster + 6], "little")
    height = int.from_bytes(data[raster + 6 : raster + 8], "little")
    assert width_bytes * 8 == PAPER_DOTS[paper]
    assert len(data) > raster + 8 + width_bytes * height  # the image whole, then more
    assert b"\x1dV" in data[raster + 8 + width_bytes * height :]  # GS V: the cut


def test_every_letter_mongolian_needs_is_in_the_bundled_font() -> None:
    """Ө, Ү and ₮ drawn as themselves, never as the font's empty box (.notdef)."""
    missing = "\u0d80"  # a code point DejaVu Sans does not draw
    for bold in ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf"):
        font = ImageFont.truetype(str(FONTS / bold), 22)
        box = bytes(font.getmask(missing))
        letters = set("АБВГДЕЁЖЗИЙКЛМНОӨПРСТУҮФХЦЧШЩЪЫЬЭЮЯ₮№")
        letters |= {c.lower() for c in letters}
        assert not [c for c in letters if bytes(font.getmask(c)) == box]
    assert (FONTS / "LICENSE").read_text().startswith("Format:") and "Bitstream" in (
        FONTS / "LICENSE"
    ).read_text()


def test_o_bar_and_straight_u_differ_from_o_and_u_on_paper() -> None:
    def ink(text: str) -> bytes:
        return draw(Slip("test", "x", (SlipLine(text, style="big"),))).tobytes()

    assert ink("Ө") != ink("О") and ink("Ү") != ink("У")


@pytest.mark.parametrize("paper", [58, 80])
def test_a_preview_is_a_png_as_wide_as_the_paper(paper: int) -> None:
    image = Image.open(io.BytesIO(png_bytes(slips()["test"], paper)))
    assert image.format == "PNG" and image.width == PAPER_DOTS[paper]
    # ink on every one of the test slip's lines: nothing drawn off the paper
    assert 100 < image.height < 1200
    assert image.convert("L").getextrema()[0] == 0


# --- the setting ------------------------------------------------------------------------


def test_a_setting_names_a_port_or_says_how_to_write_one(tmp_path: Path) -> None:
    assert open_port(None) is None and open_port("off") is None and open_port("") is None
    file_port = open_port(f"file:{tmp_path}/slips.bin")
    assert isinstance(file_port, FilePort) and file_port.path == tmp_path / "slips.bin"
    for good in ("usb:0416:5011", "serial:/dev/ttyUSB0", "serial:/dev/ttyACM0@9600"):
        assert isinstance(open_port(good), EscposPort)
    tcp = open_port("tcp:192.0.2.7")
    assert isinstance(tcp, EscposPort) and tcp.where == "192.0.2.7:9100"
    for bad in ("usb:zz:11", "serial:/dev/ttyUSB0@fast", "tcp:host:port", "lpt1", "file:"):
        with pytest.raises(PrinterSettingError) as caught:
            open_port(bad)
        assert "usb:VID:PID" in str(caught.value)


def test_print_settings_read_the_printer_table() -> None:
    settings_ = print_settings({"device": "tcp:h", "paper_mm": 80, "header": "A\n\nB"})
    assert (settings_.device, settings_.paper_mm, settings_.header) == ("tcp:h", 80, ("A", "B"))
    assert print_settings({}).paper_mm == 58 and print_settings({}).on_sale
    with pytest.raises(PrinterSettingError, match="58 or 80"):
        print_settings({"paper_mm": 57})
    with pytest.raises(PrinterSettingError, match="a list of lines"):
        print_settings({"header": 7})


def test_a_file_printer_that_cannot_be_written_is_trouble_in_words(tmp_path: Path) -> None:
    with pytest.raises(PrinterTrouble) as caught:
        FilePort(tmp_path / "no-such-dir" / "slips.bin").send(b"x")
    assert caught.value.said.key == "printer.cannot_write"
    assert "Errno" not in caught.value.said.english


# --- a network printer on loopback ------------------------------------------------------

PAPER_OK = 0x12
PAPER_OUT = 0x72  # the near-end and end sensors both (python-escpos's RT_MASK_NOPAPER)


class FakeNetworkPrinter:
    """A raw-port (9100) printer: answers DLE EOT 4 with its paper sensor when that is what
    a connection starts with, and keeps each connection's other bytes as one slip. It can
    be unplugged (the port refuses) and plugged back on the same port."""

    def __init__(self) -> None:
        self.paper = PAPER_OK
        #: a hung mechanism behind a live network card: takes the bytes, answers nothing,
        #: prints nothing
        self.black_hole = False
        self.slips: list[bytes] = []
        self.port = 0
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.plug()

    def plug(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(4)
        self.port = server.getsockname()[1]
        self._server = server
        self._thread = threading.Thread(target=self._serve, args=(server,), daemon=True)
        self._thread.start()

    def unplug(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):  # wakes the accept() below on Linux
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _serve(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                status_asked = False
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                    if self.black_hole:
                        data = b""
                        continue
                    if not status_asked and data.startswith(b"\x10\x04\x04"):
                        status_asked = True
                        data = data[3:]
                        conn.sendall(bytes([self.paper]))
                if data:
                    self.slips.append(data)

    @property
    def setting(self) -> str:
        return f"tcp:127.0.0.1:{self.port}"


@pytest.fixture
def printer() -> Iterator[FakeNetworkPrinter]:
    fake = FakeNetworkPrinter()
    yield fake
    fake.unplug()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger.open(tmp_path / "outbox.db")
    yield opened
    opened.close()


def printing_on(ledger: Ledger, setting: str, **kw: object) -> Printing:
    port = open_port(setting)
    assert port is not None
    return Printing(ledger, port, PrintSettings(device=setting), clock=lambda: AT, **kw)  # type: ignore[arg-type]


def test_a_network_printer_receives_the_slip_bytes(
    printer: FakeNetworkPrinter, ledger: Ledger
) -> None:
    printing = printing_on(ledger, printer.setting)
    printing.print_sale(tx(1))
    assert printing.drain()
    assert wait_until(lambda: len(printer.slips) == 1)
    assert printer.slips == [escpos_bytes(sale_slip(tx(1)), 58)]
    assert slip_counts(ledger) == {"printed": 1}


def test_out_of_paper_keeps_the_slips_and_says_so_then_drains_once(
    printer: FakeNetworkPrinter, ledger: Ledger
) -> None:
    states: list[tuple[str, str | None]] = []
    printing = printing_on(
        ledger, printer.setting, on_state=lambda s, why: states.append((s, why and why.key))
    )
    printer.paper = PAPER_OUT
    for n in range(1, 6):
        printing.print_sale(tx(n))
        assert not printing.drain()
    assert printing.state == "attention" and printing.trouble is not None
    assert printing.trouble.key == "printer.no_paper"
    assert printer.slips == [] and printing.queued == 5
    printer.paper = PAPER_OK
    assert printing.drain()
    assert wait_until(lambda: len(printer.slips) == 5)
    assert printer.slips == [escpos_bytes(sale_slip(tx(n)), 58) for n in range(1, 6)]
    assert states == [("attention", "printer.no_paper"), ("ready", None)]
    assert printing.queued == 0


def test_an_unplugged_printer_keeps_the_slips_until_it_is_back(
    printer: FakeNetworkPrinter, ledger: Ledger
) -> None:
    printing = printing_on(ledger, printer.setting)
    printer.unplug()
    printing.print_sale(tx(1))
    printing.print_refund(tx(2))
    assert not printing.drain()
    assert printing.trouble is not None and printing.trouble.key == "printer.unreachable"
    printer.plug()
    assert printing.drain()
    assert wait_until(lambda: len(printer.slips) == 2)
    assert printing.state == "ready" and printing.queued == 0


def test_the_worker_drains_by_itself_when_the_printer_comes_back(
    printer: FakeNetworkPrinter, ledger: Ledger
) -> None:
    printing = printing_on(ledger, printer.setting, retry_s=0.05)
    printer.unplug()
    printing.start()
    try:
        for n in range(1, 4):
            printing.print_sale(tx(n))
        assert wait_until(lambda: printing.state == "attention")
        printer.plug()
        assert wait_until(lambda: len(printer.slips) == 3 and printing.queued == 0)
        assert printing.state == "ready"
    finally:
        printing.stop()


def test_a_sale_told_twice_prints_once_and_a_reprint_is_a_copy(ledger: Ledger) -> None:
    sent: list[bytes] = []
    printing = Printing(ledger, MemoryPort(sent), clock=lambda: AT)
    assert printing.print_sale(tx(1)) is not None
    assert printing.print_sale(tx(1)) is None  # a retry, a restart: no second slip
    assert printing.reprint(tx(1, receipt="R-1", status="issued")) is not None
    assert printing.drain()
    assert len(sent) == 2 and sent[0] != sent[1]
    kinds = [(job["kind"], job["reprint"]) for job in recent_slips(ledger)]
    assert kinds == [("sale", 1), ("sale", 0)]


def test_a_damaged_queue_row_is_set_aside_and_blocks_nothing(ledger: Ledger) -> None:
    sent: list[bytes] = []
    printing = Printing(ledger, MemoryPort(sent), clock=lambda: AT)
    queue_slip(ledger, "sale", "tx_broken", "{not json", reprint=False, at=0.0)
    printing.print_sale(tx(1))
    assert printing.drain()
    assert len(sent) == 1
    assert slip_counts(ledger) == {"dropped": 1, "printed": 1}


# --- the class of the bug: any history of sales, trouble and restarts -------------------


@dataclass
class MemoryPort:
    """A port we own, for the property test: on, off, or out of paper."""

    sent: list[bytes] = field(default_factory=list)
    trouble: str | None = None
    name: str = "memory"

    def send(self, data: bytes) -> None:
        self.probe()
        self.sent.append(data)

    def probe(self) -> None:
        if self.trouble is not None:
            raise PrinterTrouble(say(self.trouble, "trouble"))


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("sale"), st.integers(1, 6)),
        st.tuples(st.just("reprint"), st.integers(1, 6)),
        st.tuples(st.just("trouble"), st.sampled_from(["printer.no_paper", "printer.lost"])),
        st.tuples(st.just("fixed"), st.just(0)),
        st.tuples(st.just("drain"), st.just(0)),
        st.tuples(st.just("restart"), st.just(0)),
    ),
    max_size=30,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_any_history_prints_each_sale_once_and_every_reprint(
    steps: list[tuple[str, int | str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Sales told any number of times, reprints, a printer failing and coming back, the
    kiosk restarting: once the printer is back and the queue drained, each sale's slip
    printed exactly once, each reprint once, nothing left queued."""
    path = tmp_path_factory.mktemp("prints") / "outbox.db"
    port = MemoryPort()
    ledger = Ledger.open(path)
    printing = Printing(ledger, port, clock=lambda: AT)
    sales: set[int] = set()
    reprints = 0
    try:
        for step, n in steps:
            if step == "sale":
                printing.print_sale(tx(int(n)))
                sales.add(int(n))
            elif step == "reprint":
                printing.reprint(tx(int(n)))
                reprints += 1
            elif step == "trouble":
                port.trouble = str(n)
            elif step == "fixed":
                port.trouble = None
            elif step == "drain":
                printing.drain()
            else:
                ledger.close()
                ledger = Ledger.open(path)
                printing = Printing(ledger, port, clock=lambda: AT)
        port.trouble = None
        assert printing.drain()
    finally:
        ledger.close()
    originals = [escpos_bytes(sale_slip(tx(n)), 58) for n in sales]
    assert sorted(port.sent.count(slip) for slip in originals) == [1] * len(sales)
    assert len(port.sent) == len(sales) + reprints


# --- doctor -----------------------------------------------------------------------------


def test_doctor_reaches_the_printer_without_printing(printer: FakeNetworkPrinter) -> None:
    set_language("en")
    check = check_printer({"device": printer.setting, "paper_mm": 80})
    assert check.status is Status.OK and "80 mm" in check.detail
    printer.paper = PAPER_OUT
    check = check_printer({"device": printer.setting})
    assert check.status is Status.FAIL and check.detail == "the printer is out of paper"
    assert "paper roll" in check.fix
    printer.unplug()
    check = check_printer({"device": printer.setting})
    assert check.status is Status.FAIL and "does not answer" in check.detail
    assert "lp group" in check.fix
    assert wait_until(lambda: True) and printer.slips == []  # nothing was printed


def test_doctor_on_no_printer_a_bad_setting_and_a_file(tmp_path: Path) -> None:
    set_language("en")
    assert check_printer({}).status is Status.SKIP
    bad = check_printer({"device": "lpt1"})
    assert bad.status is Status.FAIL and "usb:VID:PID" in bad.detail and "lsusb" in bad.fix
    assert check_printer({"device": f"file:{tmp_path}/lp0"}).status is Status.OK
    missing = check_printer({"device": f"file:{tmp_path}/nowhere/lp0"})
    assert missing.status is Status.FAIL and "no such file" in missing.detail
    set_language("mn")
    assert "принтер" in check_printer({"device": "tcp:127.0.0.1:9"}).fix


# --- a hostile or broken network printer --------------------------------------------------


def test_a_printer_that_answered_and_now_swallows_slips_keeps_them_queued(
    ledger: Ledger, printer: FakeNetworkPrinter
) -> None:
    printing = printing_on(ledger, printer.setting)
    printing.print_sale(tx(1))
    assert printing.drain() and len(printer.slips) == 1
    printer.black_hole = True  # the mechanism hangs; the network card still takes bytes
    printing.print_sale(tx(2))
    assert not printing.drain()  # not marked printed: it was never printed
    assert printing.queued == 1 and printing.state == "attention"
    assert printing.trouble is not None and printing.trouble.key == "printer.lost"
    printer.black_hole = False
    assert printing.drain() and len(printer.slips) == 2 and printing.queued == 0


def test_a_printer_that_never_answers_the_paper_sensor_is_printed_to_without_asking(
    ledger: Ledger, printer: FakeNetworkPrinter
) -> None:
    # some printers do not answer status questions at all: nothing tells them from a
    # black hole, so the slip is sent (the limit hardware.md states)
    printer.black_hole = True
    printing = printing_on(ledger, printer.setting)
    printing.print_sale(tx(1))
    assert printing.drain() and printing.queued == 0


def _rude_printer(behaviour: str) -> tuple[socket.socket, threading.Thread]:
    """A raw port that accepts and then hangs up at once, or answers the paper sensor
    with a byte no printer sends (every bit set)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                if behaviour == "garbage":
                    with contextlib.suppress(OSError):
                        conn.recv(3)
                        conn.sendall(b"\xff")
                        conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


@pytest.mark.parametrize("behaviour", ["hang_up", "garbage"])
def test_a_broken_printer_keeps_the_slip_queued_and_raises_nothing(
    ledger: Ledger, behaviour: str
) -> None:
    server, thread = _rude_printer(behaviour)
    try:
        port = open_port(f"tcp:127.0.0.1:{server.getsockname()[1]}")
        assert port is not None
        printing = Printing(ledger, port, clock=lambda: AT)
        printing.print_sale(tx(1))
        for _ in range(3):
            assert not printing.drain()  # never marked printed, never an exception
        assert printing.queued == 1 and printing.state == "attention"
        assert printing.trouble is not None
        assert printing.trouble.key in ("printer.lost", "printer.no_paper", "printer.unreachable")
    finally:
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join(timeout=5)
