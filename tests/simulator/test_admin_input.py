"""The `/_sim` admin API answers bad input with a plain-text 400/404, never a 500."""

from __future__ import annotations

import json

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrpos.simulator import Sandbox, SimulatorOptions, create_app
from qrpos.simulator.testing import asgi_transport

from .conftest import ASGI_BASE_URL

ADMIN_POSTS = [
    "/_sim/terminals",
    "/_sim/terminals/term_nobody00/rotate",
    "/_sim/wallets",
    "/_sim/wallets/wal_nobody/credit",
    "/_sim/faults",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
bodies = (
    st.binary(max_size=64)
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.integers(1, 50_000).map(lambda n: b"[" * n)
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(ADMIN_POSTS), body=bodies)
async def test_admin_calls_never_answer_500(path: str, body: bytes) -> None:
    app = create_app(Sandbox(SimulatorOptions(rate_limit_enabled=False)))
    async with httpx.AsyncClient(base_url=ASGI_BASE_URL, transport=asgi_transport(app)) as client:
        response = await client.post(path, content=body)
    assert response.status_code < 500, (response.status_code, response.text)


async def test_a_deeply_nested_admin_body_is_a_400() -> None:
    app = create_app(Sandbox(SimulatorOptions(rate_limit_enabled=False)))
    async with httpx.AsyncClient(base_url=ASGI_BASE_URL, transport=asgi_transport(app)) as client:
        response = await client.post("/_sim/wallets", content=b"[" * 100_000)
    assert response.status_code == 400
    assert response.text == "body is not JSON\n"
