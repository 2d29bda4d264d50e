"""A cleared other-install warning vouches only for rows committed after the clear, and
"after" is on the service's stamps, not on the last `Date` this kiosk saw.

Found by the 1,000-sale fault campaign (seed 2032): the service's clock had run ahead and
stepped back, so it stamped every commit at its high-water mark, ahead of any `Date` the
kiosk had seen. Another install's same-price row and the kiosk's own both lay there. The
clear's "suspect until" was taken from the kiosk's reading of the clock alone, so both rows
counted as "after the clear", and a sale was approved on the other install's row
(misattributed; its own row left owned by nothing). Rows committed before the clear must
go to a person, wherever their stamps are.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from qrpos.ledger import Ledger, service_sql
from qrpos.ledger.claims import FOREIGN, Claimant, Disputed, Window, judge
from qrpos.ledger.typed_rows import Connection
from qrpos.service import Transaction, parse_transaction

T0 = datetime(2026, 11, 25, 4, 0, tzinfo=UTC)


def row(n: int, at: datetime, amount: int = 4_500) -> Transaction:
    return parse_transaction(
        {
            "id": f"tx_{n:08d}",
            "amountMNT": amount,
            "status": "COMPLETED",
            "type": "CHARGE",
            "vatReceiptID": "",
            "vatStatus": "pending",
            "createdAt": at.isoformat().replace("+00:00", "Z"),
        }
    )


# each example opens a real outbox file: on a loaded machine one takes over hypothesis's
# default 200 ms deadline, which is a timing assertion, not this test's claim
@settings(deadline=None)
@given(ahead_s=st.floats(0, 3_600), reading_s=st.floats(-600, 600))
def test_rows_seen_before_the_clear_stay_doubtful_wherever_they_were_stamped(
    tmp_path_factory: object, ahead_s: float, reading_s: float
) -> None:
    ledger = Ledger.open(tmp_path_factory.mktemp("o") / "outbox.sqlite3")  # type: ignore[attr-defined]
    try:
        now = T0.timestamp()
        # the kiosk's own row and the stranger's, both at the high-water mark
        stamp = T0 + timedelta(seconds=ahead_s)
        mine, theirs = row(1, stamp), row(2, stamp + timedelta(microseconds=46))

        def see_and_clear(conn: Connection) -> datetime | None:
            service_sql.record_foreign(conn, [mine], 7, now, surplus={mine.id})
            # the service's clock as the kiosk read it: anywhere around now
            service_sql.clear_foreign(conn, now, now + reading_s, margin_s=6.0)
            return service_sql.foreign_suspect_until(conn)

        until = ledger.write(see_and_clear)
        assert until is not None and until >= stamp + timedelta(seconds=6)
        me = Claimant(7, 4_500, Window(T0 - timedelta(minutes=5), stamp + timedelta(minutes=1)))
        verdict = judge(
            me,
            [mine, theirs],
            [],
            set(),
            foreign_active=False,
            abandoned=False,
            foreign_until=until,
        )
        assert isinstance(verdict, Disputed) and verdict.reason == FOREIGN
    finally:
        ledger.close()


def test_rows_committed_after_the_clear_prove_again(tmp_path_factory: object) -> None:
    ledger = Ledger.open(tmp_path_factory.mktemp("o") / "outbox.sqlite3")  # type: ignore[attr-defined]
    try:
        now = T0.timestamp()

        def see_and_clear(conn: Connection) -> datetime | None:
            service_sql.record_foreign(conn, [row(2, T0)], 7, now)
            service_sql.clear_foreign(conn, now, now + 10, margin_s=6.0)
            return service_sql.foreign_suspect_until(conn)

        until = ledger.write(see_and_clear)
        assert until == T0 + timedelta(seconds=10)  # the reading, later than the row + margin
        later = row(3, T0 + timedelta(seconds=60))
        me = Claimant(8, 4_500, Window(T0, T0 + timedelta(minutes=2)))
        verdict = judge(
            me, [later], [], set(), foreign_active=False, abandoned=False, foreign_until=until
        )
        assert not isinstance(verdict, Disputed), verdict
    finally:
        ledger.close()
