"""Property tests of the charge body and amount rules (the same code the HTTP layer runs)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from qrpos import spec
from qrpos.simulator import Sandbox, SimulatorOptions
from qrpos.simulator.model import Reply
from qrpos.simulator.operations import parse_charge_body

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_amount_is_accepted_exactly_within_1_to_1_000_000(amount: int) -> None:
    body = json.dumps({"qrToken": "vqr_t", "amountMNT": amount}).encode()
    parsed = parse_charge_body(body)
    if 1 <= amount <= 1_000_000:
        assert parsed == ("vqr_t", amount)
    else:
        assert parsed == Reply.error(400, spec.ErrorText.AMOUNT_NOT_POSITIVE)


@given(st.text(min_size=1), st.integers(1, 1_000_000), st.text(min_size=1), json_values)
def test_any_extra_field_makes_the_body_invalid(
    token: str, amount: int, extra_name: str, extra_value: object
) -> None:
    obj = {"qrToken": token, "amountMNT": amount, extra_name: extra_value}
    parsed = parse_charge_body(json.dumps(obj).encode())
    if extra_name in spec.CHARGE_REQUEST_FIELDS:
        return  # the extra key overwrote a real field; covered by the type property
    assert parsed == Reply.error(400, spec.ErrorText.INVALID_BODY)


@given(json_values)
def test_a_mistyped_amount_is_an_invalid_body(value: object) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        return
    body = json.dumps({"qrToken": "vqr_t", "amountMNT": value}).encode()
    assert parse_charge_body(body) == Reply.error(400, spec.ErrorText.INVALID_BODY)


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash_and_only_a_valid_request_passes(body: bytes) -> None:
    parsed = parse_charge_body(body)
    if isinstance(parsed, Reply):
        assert parsed.status == 400
        assert parsed.text in (spec.ErrorText.INVALID_BODY, spec.ErrorText.AMOUNT_NOT_POSITIVE)
    else:
        obj = json.loads(body)
        assert set(obj) == spec.CHARGE_REQUEST_FIELDS


@settings(max_examples=60)
@given(st.lists(st.integers(-5, 1_200_000), min_size=1, max_size=6))
def test_balance_moves_only_by_approved_amounts(amounts: list[int]) -> None:
    sandbox = Sandbox(SimulatorOptions(rate_limit_enabled=False))
    creds = sandbox.create_terminal()
    terminal = sandbox.authenticate_basic(creds.username, creds.password)
    assert terminal is not None
    wallet = sandbox.create_wallet(1_500_000)
    expected = 1_500_000
    for amount in amounts:
        token = sandbox.wallet(wallet.wallet_id).qr_token
        body = json.dumps({"qrToken": token, "amountMNT": amount}).encode()
        reply = sandbox.charge(terminal, body, None)
        if not 1 <= amount <= 1_000_000:
            assert reply.status == 400
        elif amount > expected:
            assert reply.status == 422
            assert reply.json == {"code": spec.DeclineCode.INSUFFICIENT_FUNDS}
        else:
            assert reply.status == 201
            expected -= amount
        assert sandbox.wallet(wallet.wallet_id).balance_mnt == expected
