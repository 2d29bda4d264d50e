"""Plain http is allowed only to `localhost` itself and literal loopback addresses."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from qrpos.service import InsecureBaseURL, check_base_url, is_loopback_host

label = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?\Z")
hostnames = st.lists(label, min_size=1, max_size=4).map(".".join)
loopback_v4 = st.ip_addresses(v=4, network="127.0.0.0/8").map(str)


def _truly_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@given(hostnames | st.text(max_size=40))
@example("anything.localhost")
@example("localhost.evil.example")
@example("LOCALHOST.")
@example("127.0.0.1.nip.io")
@example("127.1")
def test_only_localhost_and_literal_loopback_addresses_count(host: str) -> None:
    assert is_loopback_host(host) == _truly_loopback(host)


@given(st.lists(label, min_size=1, max_size=3).map(".".join))
def test_plain_http_to_any_subdomain_of_localhost_is_refused(prefix: str) -> None:
    with pytest.raises(InsecureBaseURL):
        check_base_url(f"http://{prefix}.localhost:8080")


@given(loopback_v4)
def test_plain_http_to_every_loopback_address_is_allowed(address: str) -> None:
    assert check_base_url(f"http://{address}:8080/") == f"http://{address}:8080"


@pytest.mark.parametrize("url", ["http://localhost:1", "http://[::1]:1", "http://LocalHost"])
def test_plain_http_to_localhost_itself_is_allowed(url: str) -> None:
    assert check_base_url(url) == url
