"""End of day and history against the sandbox: real HTTP shapes, paging, faults."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
import stamina

from qrpos import spec
from qrpos.reports import end_of_day
from qrpos.reports.history import HistoryFeed
from qrpos.reports.history_cache import HistoryCache
from qrpos.reports.reconcile import MARGIN
from qrpos.service import ListingFailed, TerminalClient
from qrpos.service.outcomes import CredentialsRejected
from qrpos.simulator import Sandbox, TerminalCredentials

DAY = date(2024, 5, 2)
MIDNIGHT = datetime(2024, 5, 1, 16, 0, 0, tzinfo=UTC)  # 00:00 local on DAY


@dataclass(frozen=True)
class Intent:
    """A ledger row as reconciliation reads it (`qrpos.reports.reconcile.IntentLike`)."""

    id: str
    kind: str
    amount_mnt: int | None
    state: str
    charged: bool | None
    transaction_id: str | None
    created_at: datetime
    service_at: datetime | None = None
    username: str | None = None


@dataclass
class Book:
    """A ledger's charges by window (`ChargeBook`), remembering what it was asked."""

    intents: list[Intent]
    asked: list[tuple[datetime, datetime]] = field(default_factory=list)

    def charges_between(self, from_utc: datetime, to_utc: datetime) -> list[Intent]:
        self.asked.append((from_utc, to_utc))
        return [i for i in self.intents if from_utc <= i.created_at < to_utc]


@pytest.fixture(autouse=True)
def _no_backoff_sleep() -> Iterator[None]:
    with stamina.set_testing(True, attempts=3):
        yield


def seed_boundary_day(sandbox: Sandbox, username: str) -> dict[str, str]:
    """Charges either side of both midnights, a reversal and a pending receipt."""
    seed = sandbox.seed_charge
    return {
        "before": seed(username, 1_111, MIDNIGHT - timedelta(seconds=1)),
        "first": seed(username, 2_000, MIDNIGHT),
        "noon": seed(username, 15_500, MIDNIGHT + timedelta(hours=12)),
        "pending": seed(
            username,
            3_000,
            MIDNIGHT + timedelta(hours=12, minutes=5),
            vat_status=spec.VatStatus.PENDING,
        ),
        "reversed": seed(
            username, 700, MIDNIGHT + timedelta(hours=13), status=spec.TxStatus.REVERSED
        ),
        "last": seed(username, 4_000, MIDNIGHT + timedelta(days=1, microseconds=-1)),
        "after": seed(username, 9_999, MIDNIGHT + timedelta(days=1)),
    }


async def test_end_of_day_counts_exactly_the_local_day_across_many_pages(
    asgi_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    seed_boundary_day(sandbox, terminal.username)
    # page size 2 forces the cursor through every page of the window
    eod = await end_of_day(asgi_client, DAY, limit=2)
    assert (eod.charges_count, eod.gross_mnt) == (4, 2_000 + 15_500 + 3_000 + 4_000)
    assert (eod.reversed_count, eod.reversed_mnt) == (1, 700)
    assert (eod.vat_pending, eod.vat_issued, eod.vat_voided) == (1, 3, 1)
    assert eod.hourly[0].gross_mnt == 2_000
    assert eod.hourly[12].gross_mnt == 18_500
    assert eod.hourly[23].gross_mnt == 4_000


async def test_a_rate_limited_page_is_retried_in_place_not_counted_twice(
    asgi_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    seed_boundary_day(sandbox, terminal.username)
    clean = await end_of_day(asgi_client, DAY, limit=2)
    sandbox.arm_fault("rate_limit", count=2)
    again = await end_of_day(asgi_client, DAY, limit=2)
    assert again == clean


async def test_rejected_credentials_stop_the_report(
    asgi_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    sandbox.rotate_password(terminal.username)
    with pytest.raises(ListingFailed) as info:
        await end_of_day(asgi_client, DAY)
    assert isinstance(info.value.outcome, CredentialsRejected)


async def test_csv_export_holds_the_day_rows_and_totals(
    asgi_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials, tmp_path: Path
) -> None:
    ids = seed_boundary_day(sandbox, terminal.username)
    target = tmp_path / "usb" / "day.csv"
    target.parent.mkdir()
    eod = await end_of_day(asgi_client, DAY, csv_path=target)
    lines = target.read_text(encoding="utf-8").splitlines()
    rows = list(csv.DictReader(lines[: lines.index("")]))
    assert {r["id"] for r in rows} == {
        ids[k] for k in ("first", "noon", "pending", "reversed", "last")
    }
    assert rows[-1]["localTime"] == "2024-05-02 00:00:00"
    assert f"charges.grossMNT,{eod.gross_mnt}" in lines
    assert list(target.parent.iterdir()) == [target]  # no partial file left behind


async def test_a_failed_export_leaves_no_file_under_the_chosen_name(
    asgi_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials, tmp_path: Path
) -> None:
    seed_boundary_day(sandbox, terminal.username)
    sandbox.rotate_password(terminal.username)
    target = tmp_path / "day.csv"
    with pytest.raises(ListingFailed):
        await end_of_day(asgi_client, DAY, csv_path=target)
    assert list(tmp_path.iterdir()) == []


async def test_reconciliation_names_what_the_two_sides_disagree_on(
    asgi_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    ids = seed_boundary_day(sandbox, terminal.username)
    noon = MIDNIGHT + timedelta(hours=12)
    book = Book(
        [
            Intent("1", "charge", 15_500, "approved", True, ids["noon"], noon),
            Intent("2", "charge", 800, "approved", True, "tx_nowhere", noon),
            Intent("3", "charge", 900, "unresolved", None, None, noon),
            Intent("4", "reversal", 700, "pending", None, ids["reversed"], noon),
            Intent("5", "charge", 100, "approved", True, "tx_tomorrow", noon + timedelta(days=1)),
        ]
    )
    eod = await end_of_day(asgi_client, DAY, ledger=book)
    # the ledger was read for the day and its margins, once
    assert book.asked == [(MIDNIGHT - MARGIN, MIDNIGHT + timedelta(days=1) + MARGIN)]
    rec = eod.reconciliation
    assert rec is not None
    assert rec.matched == 1
    assert [c.transaction_id for c in rec.missing_on_service] == ["tx_nowhere"]
    assert {c.transaction_id for c in rec.unknown_locally} == {
        ids[k] for k in ("first", "pending", "reversed", "last")
    }
    assert [c.intent_id for c in rec.unresolved] == ["3"]
    # the margin rows were looked at but not counted in the totals
    assert eod.charges_count == 4


async def test_history_is_served_from_the_cache_when_offline(
    asgi_client: TerminalClient, sandbox: Sandbox, terminal: TerminalCredentials, tmp_path: Path
) -> None:
    ids = seed_boundary_day(sandbox, terminal.username)
    cache = HistoryCache.in_state_dir(tmp_path)
    now = MIDNIGHT + timedelta(days=1, hours=1)
    feed = HistoryFeed(asgi_client, cache, lambda: now)
    online = await feed.page(day=DAY, limit=3)
    assert not online.offline and online.next is not None
    rest = await feed.page(day=DAY, cursor=online.next, limit=3)
    seen = [tx.id for tx in online.transactions + rest.transactions]
    assert seen == [ids[k] for k in ("last", "reversed", "pending", "noon", "first")]

    gone = TerminalClient("http://127.0.0.1:9", terminal.username, terminal.password, timeout_s=1)
    offline_feed = HistoryFeed(gone, HistoryCache.in_state_dir(tmp_path), lambda: now)
    first = await offline_feed.page(day=DAY, limit=3)
    assert first.offline and first.synced_at == now
    assert first.reason and "connect" in str(first.reason)
    second = await offline_feed.page(day=DAY, cursor=first.next, limit=3)
    assert [tx.id for tx in first.transactions + second.transactions] == seen
    assert second.next is None
    await gone.aclose()
