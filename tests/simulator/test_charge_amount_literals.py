"""The charge body's amount, written as any JSON literal: an integer outside 1..1,000,000 is
`amount must be positive` however large (2^63, 10^30, -2^63, ten thousand digits), and
only a non-integer (1.5, 1.0, 1e3, "5", true, null, [], {}) is `invalid request body`.

The body is built as text, so integers beyond what Python's json (or an int64) can write
are covered; each property runs on the parsing function and through HTTP against the
real sandbox, in-process (ASGI) and over loopback TCP.
"""

from __future__ import annotations

import httpx
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qrpos import spec
from qrpos.simulator import TerminalCredentials
from qrpos.simulator.model import Reply
from qrpos.simulator.operations import parse_charge_body

from .conftest import assert_text_error, auth

BIG = ["9223372036854775808", "-9223372036854775808", "1" + "0" * 30, "9" * 10_000]

integer_literals = st.builds(
    lambda sign, first, rest: f"{sign}{first}{rest}",
    st.sampled_from(["", "-"]),
    st.sampled_from("123456789"),
    st.text("0123456789", max_size=40) | st.text("0123456789", min_size=4_000, max_size=6_000),
) | st.sampled_from(["0", "-0", *BIG])

non_integer_literals = st.one_of(
    st.builds(lambda i, f: f"{i}.{f}", integer_literals, st.text("0123456789", min_size=1)),
    st.builds(
        lambda i, e, x: f"{i}{e}{x}",
        integer_literals,
        st.sampled_from(["e", "E", "e+", "E-"]),
        st.integers(0, 400).map(str),
    ),
    st.sampled_from(['"5"', '"1000"', "true", "false", "null", "[]", "[5]", "{}", '{"v":5}']),
)


def body_with(literal: str, *, amount_first: bool = False) -> bytes:
    token = f'"{spec.FIELD_QR_TOKEN}": "vqr_amount_test"'
    amount = f'"{spec.FIELD_AMOUNT}" : {literal}'
    fields = [amount, token] if amount_first else [token, amount]
    return ("{ " + ", ".join(fields) + " }").encode()


def expected_text(literal: str) -> str:
    """What the spec answers for an amount written as `literal`."""
    digits = literal.removeprefix("-")
    if not digits.isdigit():
        return spec.ErrorText.INVALID_BODY
    # never int() a huge literal: past 4,300 digits Python refuses to
    in_range = not literal.startswith("-") and len(digits) <= 7 and 1 <= int(digits) <= 1_000_000
    assert not in_range, "the strategies only write amounts outside the range"
    return spec.ErrorText.AMOUNT_NOT_POSITIVE


@given(integer_literals.filter(lambda s: len(s) > 7 or not 1 <= int(s) <= 1_000_000), st.booleans())
@example("9223372036854775808", False)
@example("-9223372036854775808", True)
@example("1" + "0" * 30, False)
@example("9" * 10_000, False)
def test_an_integer_outside_the_range_of_any_size_is_amount_must_be_positive(
    literal: str, amount_first: bool
) -> None:
    reply = parse_charge_body(body_with(literal, amount_first=amount_first))
    assert reply == Reply.error(400, spec.ErrorText.AMOUNT_NOT_POSITIVE)


@given(non_integer_literals, st.booleans())
@example("1.5", False)
@example("1.0", True)
@example("1e3", False)
def test_a_number_that_is_not_an_integer_or_no_number_is_an_invalid_body(
    literal: str, amount_first: bool
) -> None:
    reply = parse_charge_body(body_with(literal, amount_first=amount_first))
    assert reply == Reply.error(400, spec.ErrorText.INVALID_BODY)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    literal=st.one_of(
        integer_literals.filter(lambda s: len(s) > 7 or not 1 <= int(s) <= 1_000_000),
        non_integer_literals,
    )
)
@example(literal="9223372036854775808")
@example(literal="1" + "0" * 30)
@example(literal="-9223372036854775808")
@example(literal="1.5")
@example(literal='"5"')
@example(literal="true")
async def test_the_sandbox_answers_each_amount_literal_with_the_spec_text_over_http(
    raw: httpx.AsyncClient, terminal: TerminalCredentials, literal: str
) -> None:
    response = await raw.post(
        spec.CHARGE_PATH,
        content=body_with(literal),
        headers={"Content-Type": spec.JSON_CONTENT_TYPE},
        auth=auth(terminal),
    )
    assert_text_error(response, 400, expected_text(literal))
