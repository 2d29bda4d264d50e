"""A sale this kiosk refunded is not shown paid by the history cache once the service is
away (a review of issue 47's "one definition": leads left by the eighth stop).

The history cache is a copy as of its last sync; a refund the kiosk lands afterwards is
known to the outbox only. Offline, `qrpos print receipt TX` printed a "sale, thank you"
slip of the refunded sale from that copy (exit 0), and `qrpos history` listed it
`COMPLETED`, as the owner's history screen did (which also offered it for a refund and a
copy). The cache's rows are read now with the outbox's landed refunds laid over them
(`reports.history.with_refunds_here`, `ledger.refunded_here`).

Through the commands a person runs, over real HTTP to the sandbox (uvicorn), with a real
outbox and cache in the state directory.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from headless import cli_environment, qrpos
from qrpos.reports.history import HistoryFeed, with_refunds_here
from qrpos.reports.history_cache import HistoryCache
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials

GONE = "http://127.0.0.1:9"


def _statuses(listing: str) -> dict[str, str]:
    return {row["id"]: row["status"] for row in json.loads(listing)}


def test_offline_a_sale_refunded_here_is_neither_printed_nor_listed_paid(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    env = cli_environment(tmp_path, live_url, terminal)
    env["QRPOS_PRINTER"] = f"file:{tmp_path}/lp0"
    at = datetime.now(UTC) - timedelta(hours=1)
    refunded = sandbox.seed_charge(terminal.username, 12_500, at)
    kept = sandbox.seed_charge(terminal.username, 4_500, at + timedelta(minutes=5))
    online = qrpos(env, "history", "--json")  # the cache learns both rows, COMPLETED
    assert online.returncode == 0, online.stderr
    assert _statuses(online.stdout) == {refunded: "COMPLETED", kept: "COMPLETED"}

    done = qrpos(env, "reverse", refunded, "--deadline", "10")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sandbox.transaction(refunded).status.value == "REVERSED"

    env["QRPOS_BASE_URL"] = GONE
    copy = qrpos(env, "print", "receipt", refunded, "--preview", str(tmp_path / "copy.png"))
    assert copy.returncode == 1, copy.stdout + copy.stderr
    assert f"{refunded} is not a completed sale" in copy.stderr, copy.stderr
    assert not (tmp_path / "copy.png").exists()
    assert not (tmp_path / "lp0").exists()  # nothing reached the printer

    offline = qrpos(env, "history", "--json")
    assert offline.returncode == 3, offline.stderr  # offline: the cache's rows
    assert _statuses(offline.stdout) == {refunded: "REVERSED", kept: "COMPLETED"}

    # the sale nobody refunded is still copied from the cache, as before
    other = qrpos(env, "print", "receipt", kept, "--preview", str(tmp_path / "kept.png"))
    assert other.returncode == 0, other.stderr
    assert "as the history cache last saw it" in other.stdout
    assert (tmp_path / "kept.png").exists()


async def test_the_feed_lays_landed_refunds_over_the_cache_only_offline(
    tmp_path: Path, sandbox: Sandbox, terminal: TerminalCredentials, http_client: TerminalClient
) -> None:
    """The owner's history screen reads pages through `HistoryFeed`: offline, a row the
    outbox's landed refunds name is REVERSED and the others are as cached; online, the
    service's rows are shown as they are, the outbox not asked."""
    at = datetime.now(UTC) - timedelta(hours=2)
    ids = [sandbox.seed_charge(terminal.username, 1_000 * (n + 1), at) for n in range(3)]
    window = (at - timedelta(minutes=1), at + timedelta(minutes=1))
    rows = [tx async for tx in http_client.iter_transactions(from_=window[0], to=window[1])]
    assert sorted(tx.id for tx in rows) == sorted(ids)
    cache = HistoryCache.in_state_dir(tmp_path)
    cache.store(rows)
    asked: list[list[str]] = []

    def refunded_here(tx_ids: Sequence[str]) -> set[str]:
        asked.append(sorted(tx_ids))
        return {ids[1]}

    offline = HistoryFeed(None, cache, lambda: datetime.now(UTC), refunded_here)
    page = await offline.page(from_utc=window[0], to_utc=window[1])
    assert page.offline
    assert {tx.id: tx.status.value for tx in page.transactions} == {
        ids[0]: "COMPLETED",
        ids[1]: "REVERSED",
        ids[2]: "COMPLETED",
    }
    assert asked == [sorted(ids)]
    # a row already REVERSED is not asked about (only completed charges can be refunded)
    reversed_ = [tx for tx in page.transactions if tx.id == ids[1]]
    assert with_refunds_here(reversed_, refunded_here) == tuple(reversed_)
    assert len(asked) == 1

    online = HistoryFeed(http_client, cache, lambda: datetime.now(UTC), refunded_here)
    page = await online.page(from_utc=window[0], to_utc=window[1])
    assert not page.offline
    assert {tx.status.value for tx in page.transactions} == {"COMPLETED"}
    assert len(asked) == 1
    cache.close()


def test_offline_with_an_outbox_that_cannot_be_read_no_copy_is_printed(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    """The cache's copy may predate a refund only the outbox knows: when the outbox cannot
    be read (damaged, or written by a newer qrpos after a rollback), a copy is not printed
    on a guess; with no outbox at all nothing was refunded here, and the copy prints."""
    env = cli_environment(tmp_path, live_url, terminal)
    env["QRPOS_PRINTER"] = f"file:{tmp_path}/lp0"
    tx_id = sandbox.seed_charge(terminal.username, 9_000, datetime.now(UTC) - timedelta(hours=1))
    assert qrpos(env, "history", "--json").returncode == 0  # cached; no outbox made
    outbox = tmp_path / "state" / "outbox.sqlite3"
    assert not outbox.exists()
    env["QRPOS_BASE_URL"] = GONE
    fine = qrpos(env, "print", "receipt", tx_id, "--preview", str(tmp_path / "a.png"))
    assert fine.returncode == 0, fine.stderr
    assert not outbox.exists()  # a copy does not make an outbox

    newer = sqlite3.connect(outbox)  # a newer qrpos's outbox, the release rolled back
    newer.execute("PRAGMA user_version = 9999")
    newer.close()
    for n, damage in enumerate((None, b"this is not an outbox " * 400)):
        if damage is not None:
            outbox.write_bytes(damage)
        png = tmp_path / f"b{n}.png"
        copy = qrpos(env, "print", "receipt", tx_id, "--preview", str(png))
        assert copy.returncode == 1, copy.stdout + copy.stderr
        assert "outbox" in copy.stderr and "Traceback" not in copy.stderr, copy.stderr
        assert not png.exists()
        listed = qrpos(env, "history", "--json")
        assert listed.returncode == 1 and "outbox" in listed.stderr, listed.stderr
