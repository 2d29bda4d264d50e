"""The kiosk's health as Prometheus metrics, for node_exporter's textfile collector.

No port is opened on the till: the kiosk writes `qrpos.prom` into the collector's
directory (`write_to_textfile` writes a temporary file and renames it, so node_exporter
never reads half a file) and node_exporter serves it with its own metrics. A kiosk that
stops writing shows up as a stale `node_textfile_mtime_seconds` (the "kiosk silent" alert
in deploy/monitoring/). Every figure comes from the outbox, the client's contact log and
the scan loop: gathering sends no request.

Metric names are listed in `METRIC_NAMES` (the alert-rule test checks the rules against it).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, write_to_textfile

from qrpos import __version__

if TYPE_CHECKING:
    from qrpos.ledger import Ledger
    from qrpos.scanner.events import ScanStats
    from qrpos.service.contact import ContactLog

log = logging.getLogger("qrpos.metrics")

DEFAULT_DIR = Path("/var/lib/node_exporter/textfile_collector")
DIR_ENV = "QRPOS_METRICS_DIR"
FILE_NAME = "qrpos.prom"
#: how often the running kiosk rewrites the file
EVERY_S = 30.0
_LOCAL = timedelta(hours=8)  # Mongolia, no DST: the shop's day (as qrpos.reports)


def metrics_dir(explicit: Path | None = None) -> Path:
    """Where the file goes: the option, else `$QRPOS_METRICS_DIR`, else node_exporter's
    Debian default."""
    if explicit is not None:
        return explicit
    env = os.environ.get(DIR_ENV)
    return Path(env) if env else DEFAULT_DIR


@dataclass(frozen=True)
class KioskFacts:
    """Everything the metrics say, gathered from the kiosk's parts (None: not known)."""

    username: str | None
    sales_today: int
    gross_today_mnt: int
    unresolved: int
    needs_review: int
    oldest_open_age_s: float
    last_approved_at: float | None
    credentials_rejected: bool
    reachable: bool | None
    rate_limited: int
    outbox_ok: bool
    camera: ScanStats | None
    #: receipt slips waiting for the printer (0 with no printer)
    slips_waiting: int = 0
    #: the cashier whose shift is open (None: none, or no shifts on this till)
    on_shift: str | None = None
    #: today's sales and gross per cashier, from the shifts opened today
    by_cashier: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: sales waiting for the owner, by the review's reason (`ReviewReason` values)
    reviews_by_reason: dict[str, int] = field(default_factory=dict)


def gather(
    *,
    ledger: Ledger | None,
    contact: ContactLog | None,
    username: str | None,
    camera: ScanStats | None,
    locked: bool = False,
    now: datetime | None = None,
) -> KioskFacts:
    """Read the outbox (today's sales, what is open) and the contact log."""
    from qrpos.ledger import prints_sql, sales_sql
    from qrpos.ledger.listing import charge_views, outbox_views
    from qrpos.ledger.money import Money, is_sold

    now = now or datetime.now(UTC)
    local_midnight = (now + _LOCAL).replace(hour=0, minute=0, second=0, microsecond=0) - _LOCAL
    sales = gross = unresolved = review = 0
    oldest = 0.0
    last_approved: float | None = None
    outbox_ok = True
    rejected = locked
    if ledger is not None:
        outbox_ok = ledger.integrity_ok
        # each with its money: a sale whose row was refunded (by hand, or by a person's
        # review) is not takings, as the shift's X and Z count it
        views = ledger.read(
            lambda c: charge_views(
                c,
                sales_sql.list_intents(
                    c,
                    include_final=True,
                    created_from=local_midnight.timestamp(),
                    created_to=now.timestamp() + 1,
                ),
            )
        )
        for view in views:
            if is_sold(view.state, view.charged, view.money == Money.REFUNDED):
                sales += 1
                gross += view.amount_mnt or 0
                at = view.created_at.timestamp()
                last_approved = at if last_approved is None else max(last_approved, at)
        for view in outbox_views(ledger, include_final=False):
            if view.state == "needs_review":
                review += 1
            elif view.money == Money.UNKNOWN:
                # its money not yet known, whatever the state (pending, unresolved, a watched
                # abandon, a 401 mid-sale): the ledger's one definition, not a list of states
                unresolved += 1
            else:
                continue
            oldest = max(oldest, (now - view.created_at).total_seconds())
    by_reason: dict[str, int] = {}
    if ledger is not None:
        from qrpos.ledger.reviews import open_reviews

        for waiting in ledger.read(open_reviews):
            by_reason[str(waiting.reason)] = by_reason.get(str(waiting.reason), 0) + 1
    slips_waiting = 0
    on_shift: str | None = None
    per_cashier: dict[str, tuple[int, int]] = {}
    if ledger is not None:
        from qrpos.ledger.shifts import by_cashier, current_shift, shifts

        slips_waiting = ledger.read(prints_sql.print_counts).get(prints_sql.PrintState.QUEUED, 0)
        shift = current_shift(ledger)
        on_shift = shift.cashier if shift is not None else None
        today = [s for s in shifts(ledger) if s.opened_at >= local_midnight]
        per_cashier = {
            name: (shown.sales, shown.sales_mnt)
            for name, shown in by_cashier(ledger, today).items()
        }
    if contact is not None:
        rejected = rejected or _rejected_last(contact)
    return KioskFacts(
        username=username,
        sales_today=sales,
        gross_today_mnt=gross,
        unresolved=unresolved,
        needs_review=review,
        oldest_open_age_s=oldest,
        last_approved_at=last_approved,
        credentials_rejected=rejected,
        reachable=contact.reachable if contact is not None else None,
        rate_limited=contact.rate_limited if contact is not None else 0,
        outbox_ok=outbox_ok,
        camera=camera,
        slips_waiting=slips_waiting,
        on_shift=on_shift,
        by_cashier=per_cashier,
        reviews_by_reason=by_reason,
    )


def _rejected_last(contact: ContactLog) -> bool:
    # a 401 locks the kiosk until re-pairing; a later answer means a new pairing works
    return contact.credentials_rejected > 0 and contact.last_status == 401


METRIC_NAMES = (
    "qrpos_info",
    "qrpos_sales_today",
    "qrpos_gross_today_mnt",
    "qrpos_unresolved_sales",
    "qrpos_needs_review_sales",
    "qrpos_review_sales",
    "qrpos_oldest_open_sale_age_seconds",
    "qrpos_last_approved_charge_timestamp_seconds",
    "qrpos_credentials_rejected",
    "qrpos_service_reachable",
    "qrpos_rate_limited_responses_total",
    "qrpos_camera_fps",
    "qrpos_camera_decode_seconds",
    "qrpos_camera_running",
    "qrpos_outbox_integrity_ok",
    "qrpos_print_queue_slips",
    "qrpos_shift_open",
    "qrpos_cashier_sales_today",
    "qrpos_cashier_gross_today_mnt",
)


def registry_for(facts: KioskFacts) -> CollectorRegistry:
    """The facts as a fresh registry (one file's worth)."""
    reg = CollectorRegistry(auto_describe=True)

    def gauge(name: str, doc: str, value: float) -> None:
        Gauge(name, doc, registry=reg).set(value)

    info = Gauge(
        "qrpos_info", "The kiosk's terminal and version", ["username", "version"], registry=reg
    )
    info.labels(facts.username or "", __version__).set(1)
    gauge(
        "qrpos_sales_today",
        "Sales of the local day (UTC+8) charged and kept; a refunded one leaves it",
        facts.sales_today,
    )
    gauge("qrpos_gross_today_mnt", "Gross takings of the local day, MNT", facts.gross_today_mnt)
    gauge("qrpos_unresolved_sales", "Sales whose outcome is not yet known", facts.unresolved)
    gauge("qrpos_needs_review_sales", "Sales waiting for the owner's decision", facts.needs_review)
    from qrpos.ledger.events import ReviewReason

    by_reason = Gauge(
        "qrpos_review_sales",
        "Sales waiting for the owner's decision, by the review's reason",
        ["reason"],
        registry=reg,
    )
    # every reason, 0 included: an alert on refund_refused needs the series to exist
    for reason in sorted({*map(str, ReviewReason), *facts.reviews_by_reason}):
        by_reason.labels(reason).set(facts.reviews_by_reason.get(reason, 0))
    gauge(
        "qrpos_oldest_open_sale_age_seconds",
        "Age of the oldest unresolved or in-review sale (0: none)",
        facts.oldest_open_age_s,
    )
    gauge(
        "qrpos_last_approved_charge_timestamp_seconds",
        "When the last approved sale of the day was made (0: none)",
        facts.last_approved_at or 0,
    )
    gauge(
        "qrpos_credentials_rejected",
        "1 while the service rejects the terminal's credentials (sales locked until re-paired)",
        int(facts.credentials_rejected),
    )
    if facts.reachable is not None:
        gauge(
            "qrpos_service_reachable",
            "1 when the latest request got an answer",
            int(facts.reachable),
        )
    Counter("qrpos_rate_limited_responses", "429s met since the kiosk started", registry=reg).inc(
        facts.rate_limited
    )
    if facts.camera is not None:
        gauge("qrpos_camera_fps", "Frames per second read from the camera", facts.camera.fps)
        gauge(
            "qrpos_camera_decode_seconds",
            "Time to decode the latest frame",
            facts.camera.decode_ms / 1000.0,
        )
        gauge(
            "qrpos_camera_running",
            "1 while the camera delivers frames",
            int(facts.camera.camera_state == "running"),
        )
    gauge(
        "qrpos_outbox_integrity_ok",
        "1 when the outbox passed its integrity check",
        int(facts.outbox_ok),
    )
    gauge(
        "qrpos_print_queue_slips",
        "Receipt slips waiting for the printer (off, unplugged or out of paper while > 0)",
        facts.slips_waiting,
    )
    on_shift = Gauge(
        "qrpos_shift_open", "1 for the cashier whose shift is open", ["cashier"], registry=reg
    )
    if facts.on_shift is not None:
        on_shift.labels(facts.on_shift).set(1)
    sales = Gauge(
        "qrpos_cashier_sales_today",
        "Sales kept of the shifts opened today, per cashier",
        ["cashier"],
        registry=reg,
    )
    gross = Gauge(
        "qrpos_cashier_gross_today_mnt",
        "Gross of the shifts opened today, per cashier, MNT",
        ["cashier"],
        registry=reg,
    )
    for name, (count, amount) in facts.by_cashier.items():
        sales.labels(name).set(count)
        gross.labels(name).set(amount)
    return reg


def write(facts: KioskFacts, directory: Path | None = None) -> Path:
    """Write the file atomically into the collector's directory; returns its path."""
    path = metrics_dir(directory) / FILE_NAME
    write_to_textfile(str(path), registry_for(facts))
    return path


class MetricsWriter:
    """Rewrites the file every `every_s` from a daemon thread while the kiosk runs."""

    def __init__(
        self,
        facts: Callable[[], KioskFacts],
        directory: Path | None = None,
        every_s: float = EVERY_S,
    ) -> None:
        self._facts = facts
        self.directory = directory
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="qrpos-metrics", daemon=True)
        #: files written so far
        self.written = 0
        #: why the last write failed (logged once per new reason), None when it worked
        self.failed: str | None = None

    def start(self) -> None:
        """Begin writing."""
        self._thread.start()

    def stop(self) -> None:
        """Stop writing (the last file stays: its age tells the kiosk is gone)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                write(self._facts(), self.directory)
                self.written += 1
            except Exception as exc:  # metrics must never take the kiosk down
                if self.failed != str(exc):
                    log.warning("metrics not written: %s", exc)
                self.failed = str(exc)
            else:
                self.failed = None
            self._stop.wait(self.every_s)
