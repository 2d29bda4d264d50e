"""The outbox file: durable settings, integrity check, migrations, full and read-only disks."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from qrpos.ledger import ChargeDesk, Ledger, LedgerError, LedgerUnhealthy, RetryPolicy
from qrpos.ledger.migrations import SCHEMA_VERSION
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, WalletInfo


def test_open_sets_wal_full_sync_and_schema_version(ledger: Ledger) -> None:
    mode, sync, version = ledger.read(
        lambda c: (
            c.execute("PRAGMA journal_mode").fetchone()[0],
            c.execute("PRAGMA synchronous").fetchone()[0],
            c.execute("PRAGMA user_version").fetchone()[0],
        )
    )
    assert (mode, sync, version) == ("wal", 2, SCHEMA_VERSION)
    assert ledger.integrity_ok and ledger.integrity_check() == "ok"


def test_reopen_keeps_rows_and_does_not_migrate_again(tmp_path: Path) -> None:
    path = tmp_path / "o.sqlite3"
    first = Ledger.open(path)
    first.write(
        lambda c: c.execute(
            "INSERT INTO reversal (tx_id, reason, state, created_at) VALUES ('tx_a', 'manual',"
            " 'pending', 1)"
        )
    )
    first.close()
    again = Ledger.open(path)
    assert again.read(lambda c: c.execute("SELECT count(*) FROM reversal").fetchone()[0]) == 1
    again.close()


def test_newer_schema_is_refused_and_file_kept(tmp_path: Path) -> None:
    path = tmp_path / "o.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    with pytest.raises(LedgerError, match="newer qrpos"):
        Ledger.open(path)
    assert path.exists()


async def test_damaged_file_refuses_new_charges_and_is_kept(
    tmp_path: Path, asgi_client: TerminalClient, wallet: WalletInfo, sandbox: Sandbox
) -> None:
    path = tmp_path / "o.sqlite3"
    Ledger.open(path).close()
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # scribble over the schema page
    path.write_bytes(bytes(data))
    damaged = Ledger.open(path)
    try:
        assert not damaged.integrity_ok
        assert "integrity check" in damaged.integrity_message
        desk = ChargeDesk(damaged, asgi_client, policy=RetryPolicy.testing())
        with pytest.raises(LedgerUnhealthy):
            await desk.charge(10, wallet.qr_token, deadline_s=1)
    finally:
        damaged.close()
    assert path.read_bytes() == bytes(data)
    assert sandbox.transactions() == []


async def test_disk_full_refuses_the_sale_before_sending_and_loses_nothing(
    ledger: Ledger, asgi_client: TerminalClient, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    await desk.charge(10, wallet.qr_token, deadline_s=2)
    pages = ledger.read(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
    ledger.read(lambda c: c.execute(f"PRAGMA max_page_count = {pages + 2}"))
    with pytest.raises(LedgerError, match="full"):
        # fill the last free pages with settled sales, then the new sale cannot be stored
        for n in range(200):

            def fill(c: sqlite3.Connection, n: int = n) -> None:
                c.execute(
                    "INSERT INTO charge_intent (idem_key, token_sha256, token_tail, amount_mnt,"
                    " state, created_at, last_detail) VALUES (?, 'x', 'x', 1, 'declined', 0, ?)",
                    (f"filler-{n}", "x" * 300),
                )

            ledger.write(fill)
    before = desk.listing.intents(include_final=True)
    other = sandbox.create_wallet(100)
    with pytest.raises(LedgerError, match="full"):
        await desk.charge(20, other.qr_token, deadline_s=2)
    assert len(sandbox.transactions()) == 1  # nothing was sent for the refused sale
    assert desk.listing.intents(include_final=True) == before


async def test_read_only_outbox_is_reported_clearly_and_rows_kept(
    ledger: Ledger, asgi_client: TerminalClient, wallet: WalletInfo, sandbox: Sandbox
) -> None:
    desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
    await desk.charge(10, wallet.qr_token, deadline_s=2)
    # the tests run as root, for whom chmod does not bite: SQLite's own read-only switch
    ledger.read(lambda c: c.execute("PRAGMA query_only = 1"))
    other = sandbox.create_wallet(100)
    with pytest.raises(LedgerError, match="read-only"):
        await desk.charge(20, other.qr_token, deadline_s=2)
    assert len(desk.listing.intents(include_final=True)) == 1
    assert len(sandbox.transactions()) == 1


def test_state_dir_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LedgerError, match="cannot create the state dir"):
        Ledger.open(blocker / "state" / "outbox.sqlite3")


def test_a_reversal_moves_only_as_its_table_allows(tmp_path: Path) -> None:
    """Refunded and refused are final; a 401-stopped refund resumes only as pending."""
    from qrpos.ledger import refunds_sql
    from qrpos.ledger.failures import IllegalTransition
    from qrpos.ledger.states import REVERSAL_TRANSITIONS, ReversalState

    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    try:
        for old in ReversalState:
            for new in ReversalState:

                def attempt(conn: Any, old: ReversalState = old, new: ReversalState = new) -> None:
                    rid = refunds_sql.insert_reversal(
                        conn, tx_id=f"tx_{old}_{new}", reason="test", now=1.0
                    )
                    if old is not ReversalState.PENDING:
                        refunds_sql.update_reversal(conn, rid, state=old)
                    refunds_sql.update_reversal(conn, rid, state=new)

                allowed = new in REVERSAL_TRANSITIONS[old]
                if allowed:
                    ledger.write(attempt)
                else:
                    with pytest.raises(IllegalTransition):
                        ledger.write(attempt)
        # the refused moves left nothing half-done: every row kept its first state
        rows = ledger.read(lambda c: refunds_sql.list_reversals(c, include_final=True))
        assert all(r.state in REVERSAL_TRANSITIONS for r in rows)
        assert len(rows) == sum(len(v) for v in REVERSAL_TRANSITIONS.values())
    finally:
        ledger.close()


def test_a_bug_inside_a_transaction_is_raised_as_itself_not_as_damage(tmp_path: Path) -> None:
    """The damage trap takes SQLite's errors and rows that cannot be decoded; a KeyError or
    a ValueError in the ledger's own code is a bug and must be seen as one."""
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    try:

        def buggy(conn: Any) -> None:
            raise KeyError("a column the code misspelt")

        with pytest.raises(KeyError):
            ledger.write(buggy)
        with pytest.raises(ValueError):
            ledger.read(lambda conn: int("not a number"))
    finally:
        ledger.close()


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("state", "no-such-state"),
        ("created_at", "yesterday"),
        ("created_at", 1e300),
        ("attempts", 2.5),
        ("tx_json", "{not json"),
    ],
)
def test_a_damaged_row_is_reported_as_a_damaged_outbox_and_kept(
    tmp_path: Path, column: str, value: object
) -> None:
    from qrpos.ledger import outbox_views, sales_sql
    from qrpos.ledger.views import sale_result

    path = tmp_path / "outbox.sqlite3"
    ledger = Ledger.open(path)
    intent_id = ledger.write(
        lambda c: sales_sql.insert_intent(
            c, idem_key="k1", token="vqr_" + "a" * 40, amount_mnt=4500, now=1.0
        )
    )
    ledger.close()
    raw = sqlite3.connect(path)
    with raw:
        if column == "tx_json":
            raw.execute("UPDATE charge_intent SET state = 'approved', tx_json = ?", (value,))
        else:
            # the placeholders are ours; the column is one of the few named above
            raw.execute(f"UPDATE charge_intent SET {column} = ?", (value,))
    raw.close()
    ledger = Ledger.open(path)
    try:
        with pytest.raises(LedgerError, match="damaged"):
            if column == "tx_json":
                row = ledger.read(lambda c: sales_sql.get_intent(c, intent_id))
                assert row is not None
                sale_result(row)
            else:
                outbox_views(ledger, include_final=True)
    finally:
        ledger.close()


@pytest.mark.parametrize(
    ("column", "value"), [("sent_at", "yesterday"), ("sent_at", 1e300), ("n", 2.5), ("status", "x")]
)
def test_a_damaged_attempt_line_is_reported_as_a_damaged_outbox_not_a_crash(
    tmp_path: Path, column: str, value: object
) -> None:
    from qrpos.ledger import outbox_audit, sales_sql, service_sql

    path = tmp_path / "outbox.sqlite3"
    ledger = Ledger.open(path)
    intent_id = ledger.write(
        lambda c: sales_sql.insert_intent(
            c, idem_key="k1", token="vqr_" + "a" * 40, amount_mnt=4500, now=1.0
        )
    )
    ledger.write(
        lambda c: service_sql.log_attempt(
            c, kind="charge", n=1, sent_at=2.0, outcome="Unresolved", intent_id=intent_id
        )
    )
    [(view, [line])] = [outbox_audit(ledger, str(intent_id))]
    assert view.id == str(intent_id) and line.outcome == "Unresolved"
    ledger.close()
    raw = sqlite3.connect(path)
    with raw:
        # the placeholders are ours; the column is one of the few named above
        raw.execute(f"UPDATE attempt SET {column} = ?", (value,))
    raw.close()
    ledger = Ledger.open(path)
    try:
        with pytest.raises(LedgerError, match="damaged"):
            outbox_audit(ledger, str(intent_id))
    finally:
        ledger.close()


@pytest.mark.parametrize("damaged", ["{not json", '{"createdAt": 17}', "[]"])
def test_a_damaged_transaction_places_its_sale_by_the_kiosk_clock(
    tmp_path: Path, damaged: str
) -> None:
    """The reconciliation's read of a day (`charges_between`) places a sale by its row's
    service time; a row the outbox kept damaged is placed by the kiosk's clock, and the
    read of every other sale goes on (before, SQLite's json_extract failed the read)."""
    from datetime import UTC, datetime

    from qrpos.ledger import sales_sql
    from qrpos.ledger.listing import OutboxListing

    path = tmp_path / "outbox.sqlite3"
    ledger = Ledger.open(path)
    for n, at in enumerate((1_000.0, 2_000.0)):

        def insert(c: sqlite3.Connection, n: int = n, at: float = at) -> int:
            return sales_sql.insert_intent(
                c, idem_key=f"k{n}", token="vqr_" + "a" * 40, amount_mnt=4500, now=at
            )

        ledger.write(insert)
    ledger.close()
    raw = sqlite3.connect(path)
    with raw:
        raw.execute("UPDATE charge_intent SET tx_json = ? WHERE idem_key = 'k0'", (damaged,))
    raw.close()
    ledger = Ledger.open(path)
    listing = OutboxListing(ledger, lambda: datetime.now(UTC))
    day = listing.charges_between(
        datetime.fromtimestamp(0, UTC), datetime.fromtimestamp(1_500, UTC)
    )
    assert [(v.id, v.service_at) for v in day] == [("1", None)]
    ledger.close()
