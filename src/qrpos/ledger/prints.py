"""The receipt printer's queue, kept in the outbox's database beside the sales it prints:
a slip is written before it is sent and marked printed once the printer took it, so a
printer that is off, out of paper or unplugged loses no slip and blocks no sale.

A sale's own slip is queued once per transaction (an approval told twice queues no second
one); a reprint is a new slip, never a second sale. Times are UTC seconds for people; the
worker's waits are its own (`qrpos.peripherals.printing`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qrpos.ledger import prints_sql

# the queue's states, for the worker and the commands that read the queue
from qrpos.ledger.prints_sql import PrintState as PrintState
from qrpos.ledger.store import Ledger


@dataclass(frozen=True)
class PrintJob:
    """A queued slip: its id and its lines (JSON, as `peripherals.slip.Slip` writes them)."""

    id: int
    slip: str


def queue_slip(
    ledger: Ledger, kind: str, ref: str, slip: str, *, reprint: bool, at: float
) -> int | None:
    """Queue a slip; None when this first slip of `ref` was queued before."""
    return ledger.write(
        lambda conn: prints_sql.queue_print(conn, kind, ref, slip, reprint=reprint, at=at)
    )


def next_slip(ledger: Ledger) -> PrintJob | None:
    """The oldest slip still to print."""
    found = ledger.read(prints_sql.next_print)
    return PrintJob(*found) if found else None


def slip_printed(ledger: Ledger, job_id: int, at: float) -> None:
    ledger.write(lambda conn: prints_sql.mark_printed(conn, job_id, at))


def slip_failed(ledger: Ledger, job_id: int, error: str) -> None:
    ledger.write(lambda conn: prints_sql.mark_print_failed(conn, job_id, error))


def slip_dropped(ledger: Ledger, job_id: int, error: str) -> None:
    """A slip that can never print (its row cannot be read): out of the queue, kept."""
    ledger.write(lambda conn: prints_sql.mark_print_dropped(conn, job_id, error))


def slip_counts(ledger: Ledger) -> dict[PrintState, int]:
    """Slips by state (`PrintState`): queued, printed, dropped."""
    return ledger.read(prints_sql.print_counts)


def recent_slips(ledger: Ledger, limit: int = 50) -> list[dict[str, Any]]:
    return ledger.read(lambda conn: prints_sql.print_jobs(conn, limit))
