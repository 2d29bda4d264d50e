"""The till's printing: slips queued in the outbox's database, printed by one worker thread.

`print_sale` is called when a sale has settled as charged (its transaction is the proof);
`reprint`, `print_refund`, `print_end_of_day` and `print_test` by the owner's screens and
`qrpos print`. Each writes the slip to the queue first (`qrpos.ledger.prints`) and wakes
the worker, so the caller never waits for paper. The worker sends the oldest slip; when
the printer is in trouble (off, unplugged, out of paper) the slip stays queued, `state`
says "attention" with the reason, and it tries again every few seconds: the queue drains
when the printer is back, each slip once.

A crash between the printer taking a slip and the queue marking it printed prints that
one slip again after the restart (a copy of a receipt, never a second sale).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from qrpos.ledger import Ledger
from qrpos.ledger.prints import (
    PrintState,
    next_slip,
    queue_slip,
    slip_counts,
    slip_dropped,
    slip_failed,
    slip_printed,
)
from qrpos.peripherals.printer import PAPER_WIDTHS, Port, PrinterSettingError, PrinterTrouble
from qrpos.peripherals.slip import (
    Slip,
    end_of_day_slip,
    printer_test_slip,
    refund_slip,
    sale_slip,
    z_slip,
)
from qrpos.reports.endofday import EndOfDay
from qrpos.said import Said, say
from qrpos.service.models import Transaction

log = logging.getLogger("qrpos.printer")

#: a printer in trouble is tried again this often
RETRY_S = 5.0


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class PrintSettings:
    """`[printer]`: the device, the paper's width and the shop's lines on every slip."""

    device: str = "off"
    paper_mm: int = 58
    header: Sequence[str] = ()
    #: print the sale's slip by itself on approval (else only on the owner's request)
    on_sale: bool = True


def print_settings(table: Mapping[str, Any]) -> PrintSettings:
    """`PrintSettings` from the `[printer]` table: ``device``, ``paper_mm`` (58 or 80),
    ``header`` (the shop's lines: a list, or one text with line breaks), ``on_sale``."""
    paper = table.get("paper_mm", 58)
    if paper not in PAPER_WIDTHS:
        raise PrinterSettingError(
            say("printer.paper", "[printer] paper_mm is 58 or 80, not {value}", value=repr(paper))
        )
    header = table.get("header", ())
    if not isinstance(header, str | list | tuple):
        raise PrinterSettingError(
            say("printer.header", "[printer] header is a text or a list of lines")
        )
    lines = header.splitlines() if isinstance(header, str) else [str(h) for h in header]
    return PrintSettings(
        device=str(table.get("device", "off")),
        paper_mm=int(paper),
        header=tuple(line for line in lines if line.strip()),
        on_sale=bool(table.get("on_sale", True)),
    )


@dataclass
class Printing:
    """The queue and its worker for one printer (`port`)."""

    ledger: Ledger
    port: Port
    settings: PrintSettings = field(default_factory=PrintSettings)
    clock: Callable[[], datetime] = utc_now
    retry_s: float = RETRY_S
    #: called (from the worker thread) when `state` changes: the status bar listens
    on_state: Callable[[str, Said | None], None] = lambda state, why: None
    #: called (from the worker thread) with each slip the printer took (the demo's
    #: virtual printer shows it)
    on_printed: Callable[[Slip], None] = lambda slip: None
    state: str = "ready"
    trouble: Said | None = None
    printed: int = 0
    _wake: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    # --- what the till prints --------------------------------------------------------

    def print_sale(self, tx: Transaction) -> int | None:
        """The customer's slip of a settled charge, once per transaction."""
        if not self.settings.on_sale:
            return None
        return self._queue(sale_slip(tx, header=self.settings.header), reprint=False)

    def reprint(self, tx: Transaction) -> int | None:
        """A copy of a sale's slip as the history has it now (its ДДТД once issued)."""
        slip = sale_slip(tx, header=self.settings.header, reprint_at=self.clock())
        return self._queue(slip, reprint=True)

    def print_refund(self, charge: Transaction) -> int | None:
        return self._queue(
            refund_slip(charge, self.clock(), header=self.settings.header), reprint=False
        )

    def print_end_of_day(self, eod: EndOfDay) -> int | None:
        slip = end_of_day_slip(eod, printed_at=self.clock(), header=self.settings.header)
        return self._queue(slip, reprint=True)

    def print_z(self, report: Mapping[str, Any]) -> int | None:
        """A shift's Z, once (a copy: `qrpos print z N`)."""
        return self._queue(z_slip(report, header=self.settings.header), reprint=False)

    def print_test(self) -> int | None:
        slip = printer_test_slip(
            self.clock(), header=self.settings.header, paper_mm=self.settings.paper_mm
        )
        return self._queue(slip, reprint=True)

    def _queue(self, slip: Slip, *, reprint: bool) -> int | None:
        job = queue_slip(
            self.ledger,
            slip.kind,
            slip.ref,
            slip.to_json(),
            reprint=reprint,
            at=self.clock().timestamp(),
        )
        self._wake.set()
        return job

    # --- the worker ------------------------------------------------------------------

    @property
    def queued(self) -> int:
        return slip_counts(self.ledger).get(PrintState.QUEUED, 0)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="qrpos-printer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def drain(self) -> bool:
        """Print every queued slip now; False when the printer is in trouble (tests, the
        `qrpos print` command, the worker)."""
        while not self._stop.is_set():
            job = next_slip(self.ledger)
            if job is None:
                return True
            try:
                slip = Slip.from_json(job.slip)
                data = self._bytes(slip)
            except (ValueError, KeyError, TypeError) as exc:  # a damaged row: never blocks
                log.error("print job %d cannot be read (%s): left out", job.id, exc)
                slip_dropped(self.ledger, job.id, Said.plain(f"unreadable: {exc}").to_json())
                continue
            try:
                self.port.send(data)
            except PrinterTrouble as exc:
                slip_failed(self.ledger, job.id, exc.said.to_json())
                self._set("attention", exc.said)
                return False
            slip_printed(self.ledger, job.id, self.clock().timestamp())
            self.printed += 1
            self._set("ready", None)
            try:
                self.on_printed(slip)
            except Exception:
                log.exception("printed-slip listener failed")
        return False

    def _bytes(self, slip: Slip) -> bytes:
        """What the port is sent: the ESC/POS raster (drawn here, so the drawing library
        loads only once a slip is printed), or the slip's text for a port that shows text
        (the demo's virtual printer: no drawing library in its memory at all)."""
        if getattr(self.port, "text", False):
            return (slip.plain(32) + "\n\n").encode("utf-8")
        from qrpos.peripherals.render import escpos_bytes

        return escpos_bytes(slip, self.settings.paper_mm)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                done = self.drain()
            except Exception:  # the outbox or the renderer failed: say so, keep selling
                log.exception("printing failed")
                done = False
            if self._stop.is_set():
                break
            self._wake.wait(None if done else self.retry_s)
            self._wake.clear()

    def _set(self, state: str, why: Said | None) -> None:
        if (state, why) == (self.state, self.trouble):
            return
        self.state, self.trouble = state, why
        if why is not None:
            log.warning("printer needs attention: %s", why.english)
        else:
            log.info("printer ready")
        try:
            self.on_state(state, why)
        except Exception:
            log.exception("printer state listener failed")


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll `predicate` until it holds (tests and `qrpos print`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
