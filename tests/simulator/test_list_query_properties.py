"""The list's query over its whole input space: never a 500, the spec's 400 texts, and a
window compared at the precision the caller wrote."""

from __future__ import annotations

import base64
import json
import string
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qrpos import spec
from qrpos.simulator import Sandbox, SimulatorOptions, TerminalCredentials, model
from qrpos.simulator.listing import parse_limit
from qrpos.simulator.model import Reply, Terminal
from qrpos.simulator.timestamps import Instant, parse_instant

from .conftest import assert_text_error, auth

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def _sandbox_and_terminal() -> tuple[Sandbox, Terminal]:
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    creds = sandbox.create_terminal()
    terminal = sandbox.authenticate_basic(creds.username, creds.password)
    assert terminal is not None
    return sandbox, terminal


SANDBOX, TERMINAL = _sandbox_and_terminal()


def _list(query: dict[str, str]) -> Reply:
    return SANDBOX.list_transactions(TERMINAL, query)


# --- limit ------------------------------------------------------------------------------


async def test_a_limit_of_4301_nines_is_clamped_not_a_500(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    start = datetime.now(UTC) - timedelta(hours=2)
    for i in range(1001):
        sandbox.seed_charge(terminal.username, 1 + i, start + timedelta(seconds=i))
    for huge in ("9" * 4301, "1" + "0" * 10_000, "0" * 50 + "1001"):
        response = await raw.get(spec.LIST_PATH, params={"limit": huge}, auth=auth(terminal))
        assert response.status_code == 200, response.text
        assert len(response.json()["transactions"]) == spec.LIST_LIMIT_MAX


@given(st.from_regex(r"[0-9]{1,5000}", fullmatch=True))
@example("9" * 4301)
@example("0" * 4400 + "7")
def test_any_string_of_ascii_digits_is_its_value_clamped_to_1000(digits: str) -> None:
    value = Decimal(digits)  # no int-string digit limit in Decimal
    expected = None if value == 0 else int(min(value, Decimal(spec.LIST_LIMIT_MAX)))
    assert parse_limit(digits) == expected


# Integer-ish spellings that are not a positive integer of ASCII digits: each is refused.
NOT_A_LIMIT = [
    "+5", "-5", " 5", "5 ", "5\n", "\t5", "5.0", "1e3", "0x10", "5_000", "0", "000", "-0",
    "٥", "５", "²", "５0", "1,000", "ten", "9" * 4301 + "x", "NaN", "∞",
]  # fmt: skip


@pytest.mark.parametrize("raw_limit", NOT_A_LIMIT)
def test_integer_ish_limits_that_are_not_positive_integers_are_refused(raw_limit: str) -> None:
    assert _list({"limit": raw_limit}) == Reply.error(400, spec.ErrorText.INVALID_LIMIT)


@given(st.text(max_size=40))
def test_any_text_as_limit_gives_a_page_or_invalid_limit(raw_limit: str) -> None:
    reply = _list({"limit": raw_limit})
    if raw_limit and not (set(raw_limit) <= set(string.digits) and raw_limit.strip("0")):
        assert reply == Reply.error(400, spec.ErrorText.INVALID_LIMIT)
    else:
        assert reply.status == 200


async def test_integer_ish_limits_are_refused_over_http(
    raw: httpx.AsyncClient, terminal: TerminalCredentials
) -> None:
    for raw_limit in ("+5", "5\n", "٥", " 5"):
        response = await raw.get(spec.LIST_PATH, params={"limit": raw_limit}, auth=auth(terminal))
        assert_text_error(response, 400, spec.ErrorText.INVALID_LIMIT)


# --- from / to: every valid RFC 3339 date-time -------------------------------------------


@st.composite
def rfc3339(draw: st.DrawFn) -> tuple[str, int | None, str]:
    """A valid RFC 3339 date-time, with its exact UTC seconds by `date.toordinal` (an
    independent oracle; None for year 0, which `date` lacks) and its fractional digits."""
    year = draw(st.integers(0, 9999))
    month = draw(st.integers(1, 12))
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    last = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    day = draw(st.integers(1, last))
    hour, minute, second = (
        draw(st.integers(0, 23)),
        draw(st.integers(0, 59)),
        draw(st.integers(0, 60)),
    )
    fraction = draw(st.text("0123456789", max_size=30))
    sign = draw(st.sampled_from("+-"))
    off_h, off_m = draw(st.integers(0, 23)), draw(st.integers(0, 59))
    zone = draw(st.sampled_from(["Z", "z", f"{sign}{off_h:02d}:{off_m:02d}"]))
    sep = draw(st.sampled_from("Tt"))
    text = f"{year:04d}-{month:02d}-{day:02d}{sep}{hour:02d}:{minute:02d}:{second:02d}"
    text += (f".{fraction}" if fraction else "") + zone
    offset = 0 if zone in "Zz" else (off_h * 3600 + off_m * 60) * (1 if sign == "+" else -1)
    if year == 0:
        return text, None, fraction
    days = date(year, month, day).toordinal() - _EPOCH_ORDINAL
    return text, days * 86_400 + hour * 3600 + minute * 60 + second - offset, fraction


@given(rfc3339())
@example(("0001-01-01T00:00:00+01:00", -62_135_600_400, ""))
@example(("9999-12-31T23:59:59-01:00", 253_402_304_399, ""))
@example(("2024-01-01T00:00:00.1234567891Z", 1_704_067_200, "1234567891"))
def test_every_valid_rfc3339_reads_exactly_and_never_crashes_the_list(
    case: tuple[str, int | None, str],
) -> None:
    text, seconds, fraction = case
    parsed = parse_instant(text)
    assert parsed is not None
    if seconds is not None:
        assert parsed == Instant(seconds, fraction.rstrip("0"))
    for key in ("from", "to"):
        reply = _list({key: text})
        assert reply.status == 200 or reply == Reply.error(400, spec.ErrorText.FROM_AFTER_TO)
    assert _list({"from": text, "to": text}).status == 200


def test_a_leap_second_counts_as_the_next_second() -> None:
    assert parse_instant("2016-12-31T23:59:60Z") == parse_instant("2017-01-01T00:00:00Z")


@pytest.mark.parametrize(
    "text",
    [
        "2024-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-01-01T24:00:00Z",
        "2024-01-01T00:60:00Z",
        "2024-01-01T00:00:61Z",
        "2024-01-01T00:00:00+24:00",
        "2024-01-01T00:00:00+01:60",
        "2024-01-01T00:00:00.Z",
        "2024-01-01T00:00:00Z\n",
        "２０２４-01-01T00:00:00Z",
        "2024-01-01T00:00:00.١Z",
        "+2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00+0100",
    ],
)
def test_date_times_that_are_not_rfc3339_are_refused(text: str) -> None:
    assert parse_instant(text) is None
    assert _list({"from": text}) == Reply.error(400, spec.ErrorText.INVALID_FROM)
    assert _list({"to": text}) == Reply.error(400, spec.ErrorText.INVALID_TO)


async def test_year_edges_with_offsets_answer_200_over_http(
    raw: httpx.AsyncClient, terminal: TerminalCredentials
) -> None:
    params = {"from": "0001-01-01T00:00:00+01:00", "to": "9999-12-31T23:59:59-01:00"}
    response = await raw.get(spec.LIST_PATH, params=params, auth=auth(terminal))
    assert response.status_code == 200, response.text


# --- precision --------------------------------------------------------------------------

moments = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)


def _stem(moment: datetime) -> str:
    """RFC 3339 up to the microsecond, without a zone (strftime drops %Y's zeros)."""
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S.%f}"


@settings(max_examples=60)
@given(moments, st.integers(7, 25), st.integers(1, 9))
def test_bounds_compare_at_the_precision_the_caller_sent(
    moment: datetime, digits: int, last: int
) -> None:
    sandbox, terminal = _sandbox_and_terminal()
    tx_id = sandbox.seed_charge(terminal.username, 5, moment)
    row_at = next(t for t in sandbox.transactions() if t.id == tx_id)
    created = row_at.to_wire().created_at_text
    stem = _stem(moment)
    later = f"{stem}{'0' * (digits - 7)}{last}Z"  # a hair after the row, as many digits
    earlier = _stem(moment - timedelta(microseconds=1))
    earlier += "9" * (digits - 6) + "Z"  # a hair before it

    def ids(**query: str) -> list[str]:
        reply = sandbox.list_transactions(terminal, query)
        assert reply.status == 200, reply
        return [t["id"] for t in reply.json["transactions"]]

    assert ids(**{"from": later, "to": "9999-12-31T23:59:59Z"}) == []
    assert ids(**{"from": earlier, "to": created}) == [tx_id]
    assert ids(**{"from": created, "to": later}) == [tx_id]
    assert ids(**{"from": "0001-01-01T00:00:00Z", "to": earlier}) == []
    assert sandbox.list_transactions(terminal, {"from": later, "to": created}) == Reply.error(
        400, spec.ErrorText.FROM_AFTER_TO
    )


@given(moments)
def test_created_at_always_has_six_fractional_digits_and_reads_back_exactly(
    moment: datetime,
) -> None:
    sandbox, terminal = _sandbox_and_terminal()
    tx_id = sandbox.seed_charge(terminal.username, 5, moment)
    created = sandbox.transaction(tx_id).to_wire().created_at_text
    assert len(created) == len("2024-01-01T00:00:00.000000Z") and created.endswith("Z")
    micros = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    assert parse_instant(created) == Instant.from_micros(micros)


async def test_a_from_100ns_after_a_row_excludes_it_over_http(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    sandbox.seed_charge(terminal.username, 5, datetime(2024, 5, 1, 8, 0, 0, 123456, tzinfo=UTC))
    params = {"from": "2024-05-01T08:00:00.1234561Z", "to": "2024-05-02T00:00:00Z"}
    response = await raw.get(spec.LIST_PATH, params=params, auth=auth(terminal))
    assert response.status_code == 200, response.text
    assert response.json()["transactions"] == []
    params["from"] = "2024-05-01T08:00:00.1234560000Z"
    response = await raw.get(spec.LIST_PATH, params=params, auth=auth(terminal))
    assert [t[spec.FIELD_AMOUNT] for t in response.json()["transactions"]] == [5]


# --- cursor -------------------------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii")


@given(
    st.text(max_size=200)
    | st.binary(max_size=200).map(_b64)
    | st.recursive(st.integers() | st.text(), st.lists).map(lambda v: _b64(json.dumps(v).encode()))
)
@example(_b64(b"[" * 100_000))  # a deeply nested array was a RecursionError, a 500
@example(_b64(b"[1," + b"9" * 5000 + b',"tx_a"]'))  # past the int-string digit limit
@example(_b64(b'[1,-99999999999999999999,"tx_a"]'))
def test_any_cursor_gives_a_page_or_the_cursor_400(cursor: str) -> None:
    reply = _list({"cursor": cursor})
    assert reply.status == 200 or reply == Reply.error(400, model.INVALID_CURSOR_TEXT), reply
