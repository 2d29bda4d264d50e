"""Finding a sale in the history as an owner says it: by amount (however it is written),
by local time or its start, by the last characters of the id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from qrpos import spec
from qrpos.reports.history import matches
from qrpos.reports.localday import to_local
from qrpos.service import Transaction, parse_transaction

amounts = st.integers(spec.AMOUNT_MIN_MNT, spec.AMOUNT_MAX_MNT)
ids = st.text("0123456789abcdef", min_size=24, max_size=24).map(lambda h: f"tx_{h}")
moments = st.integers(0, 10**8).map(
    lambda s: datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=s)
)


def _tx(tx_id: str, amount: int, when: datetime) -> Transaction:
    return parse_transaction(
        {
            "id": tx_id,
            "amountMNT": amount,
            "status": "COMPLETED",
            "type": "CHARGE",
            "vatReceiptID": "",
            "vatStatus": "pending",
            "terminalID": "ter_test0001",
            "createdAt": when.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        }
    )


@given(tx_id=ids, amount=amounts, when=moments, other=amounts)
def test_an_amount_finds_its_rows_however_it_is_written(
    tx_id: str, amount: int, when: datetime, other: int
) -> None:
    tx = _tx(tx_id, amount, when)
    for written in (str(amount), f"{amount:,}", f"{amount:,}".replace(",", " "), f"{amount:,} ₮"):
        assert matches(tx, written)
    if other != amount and not tx_id.endswith(str(other)):
        assert not matches(tx, str(other))


@given(tx_id=ids, amount=amounts, when=moments, tail=st.integers(1, 27))
def test_the_ids_last_characters_find_it_in_either_case(
    tx_id: str, amount: int, when: datetime, tail: int
) -> None:
    tx = _tx(tx_id, amount, when)
    assert matches(tx, tx_id[-tail:].upper())
    assert matches(tx, f"  {tx_id[-tail:]} ")


@given(tx_id=ids, amount=amounts, when=moments, cut=st.integers(2, 8))
def test_a_local_time_or_its_start_finds_it(
    tx_id: str, amount: int, when: datetime, cut: int
) -> None:
    tx = _tx(tx_id, amount, when)
    local = f"{to_local(tx.created_at):%H:%M:%S}"
    if ":" in local[:cut]:
        assert matches(tx, local[:cut])
    shifted = f"{to_local(tx.created_at) + timedelta(hours=1):%H:%M}"
    assert not matches(tx, shifted)


def test_an_empty_query_finds_every_row() -> None:
    tx = _tx("tx_" + "a" * 24, 100, datetime(2024, 5, 2, tzinfo=UTC))
    assert matches(tx, "") and matches(tx, "   ")
