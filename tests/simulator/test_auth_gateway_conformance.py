"""Authentication, the gateway (429, 500, dropped connections), probes, headers, CORS."""

from __future__ import annotations

import asyncio
from email.utils import parsedate_to_datetime

import httpx
import pytest

from qrpos import spec
from qrpos.simulator import Sandbox, TerminalCredentials, WalletInfo

from .conftest import Charge, assert_text_error, auth

V1_CALLS = [
    ("POST", spec.CHARGE_PATH),
    ("POST", "/v1/transactions/tx_0123456789abcdef01234567/reverse"),
    ("GET", spec.LIST_PATH),
]


def _assert_401(response: httpx.Response) -> None:
    assert_text_error(response, 401, spec.ErrorText.UNAUTHORIZED)
    assert response.headers["www-authenticate"] == 'Basic realm="service-terminal"'


@pytest.mark.parametrize(("method", "path"), V1_CALLS)
@pytest.mark.parametrize("case", ["missing", "unknown_user", "wrong_password", "suspended"])
async def test_every_auth_failure_is_the_same_401(
    raw: httpx.AsyncClient,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    case: str,
    method: str,
    path: str,
) -> None:
    creds: tuple[str, str] | None = auth(terminal)
    if case == "missing":
        creds = None
    elif case == "unknown_user":
        creds = ("term_nobody00", terminal.password)
    elif case == "wrong_password":
        # a different last character, whatever the generated password ends with
        last = "y" if terminal.password.endswith("x") else "x"
        creds = (terminal.username, terminal.password[:-1] + last)
    else:
        sandbox.suspend_terminal(terminal.username)
    body = {"qrToken": "vqr_x", "amountMNT": 1} if method == "POST" else None
    response = await raw.request(method, path, json=body, auth=creds)
    _assert_401(response)


async def test_rotation_kills_the_old_password_at_once(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    new = sandbox.rotate_password(terminal.username)
    assert new != terminal.password and spec.PASSWORD_RE.match(new)
    _assert_401(await raw.get(spec.LIST_PATH, auth=auth(terminal)))
    assert (await raw.get(spec.LIST_PATH, auth=(terminal.username, new))).status_code == 200


async def test_suspended_terminal_keeps_its_history(
    charge: Charge, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> None:
    await charge(wallet.qr_token, 10)
    sandbox.suspend_terminal(terminal.username)
    assert len([t for t in sandbox.transactions() if t.username == terminal.username]) == 1


def test_credential_shapes(sandbox: Sandbox) -> None:
    creds = sandbox.create_terminal("m1")
    assert spec.USERNAME_RE.match(creds.username)
    assert spec.PASSWORD_RE.match(creds.password)
    assert creds.terminal_id.startswith(spec.TERMINAL_PREFIX)
    assert creds.password not in repr(creds)


async def test_gateway_ceiling_answers_429_json(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    sandbox.configure(rate_limit_enabled=True, rate_burst=5, rate_sustained_rps=0.01)
    statuses = [(await raw.get(spec.HEALTH_PATH)).status_code for _ in range(5)]
    assert statuses == [200] * 5
    limited = await raw.get(spec.LIST_PATH, auth=auth(terminal))
    assert limited.status_code == 429
    assert limited.headers["content-type"] == spec.JSON_CONTENT_TYPE
    assert limited.json() == {"message": "Too Many Requests"}
    assert float(limited.headers["retry-after"]) >= 1
    # The admin API is not behind the gateway.
    assert (await raw.post("/_sim/vat/settle")).status_code == 200


async def test_rate_limit_fault_answers_429_with_the_given_retry_after(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    sandbox.arm_fault("rate_limit", retry_after=7)
    limited = await raw.get(spec.LIST_PATH, auth=auth(terminal))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "7"
    assert (await raw.get(spec.LIST_PATH, auth=auth(terminal))).status_code == 200


async def test_error_before_commit_is_500_plain_and_applies_nothing(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    sandbox.arm_fault("error_before_commit", operation="charge")
    assert_text_error(await charge(wallet.qr_token, 10), 500, spec.ErrorText.INTERNAL_ERROR)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000


async def test_error_after_commit_is_500_but_the_charge_happened(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    sandbox.arm_fault("error_after_commit")
    assert_text_error(await charge(wallet.qr_token, 10, "k"), 500, spec.ErrorText.INTERNAL_ERROR)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 10
    assert (await charge(wallet.qr_token, 10, "k")).status_code == 201  # replayed
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 10


async def test_forbidden_refuses_a_refund_of_an_own_charge_and_applies_nothing(
    raw: httpx.AsyncClient,
    charge: Charge,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    wallet: WalletInfo,
) -> None:
    """The `forbidden` fault: the contract's 403 for a refund it will not make, on one of
    the terminal's own charges (issue 41's refused refund); the next one goes through."""
    tx_id = (await charge(wallet.qr_token, 30, "k")).json()["id"]
    sandbox.arm_fault("forbidden", operation="reverse")
    path = f"/v1/transactions/{tx_id}/reverse"
    assert_text_error(await raw.post(path, auth=auth(terminal)), 403, spec.ErrorText.FORBIDDEN)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 30
    assert (await raw.post(path, auth=auth(terminal))).status_code == 204
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000


async def test_drop_after_commit_closes_the_connection_without_a_response(
    charge: Charge, sandbox: Sandbox, wallet: WalletInfo
) -> None:
    sandbox.arm_fault("drop_after_commit", count=2)
    for _ in range(2):
        with pytest.raises(httpx.TransportError):
            await charge(wallet.qr_token, 25, "k")
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 25
    assert (await charge(wallet.qr_token, 25, "k")).status_code == 201


async def test_delay_fault_makes_the_client_time_out(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    sandbox.arm_fault("delay", seconds=1.0, operation="list")
    with pytest.raises(httpx.ReadTimeout):
        await raw.get(spec.LIST_PATH, auth=auth(terminal), timeout=0.2)


async def test_faults_aim_at_their_operation_only(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    sandbox.arm_fault("error_before_commit", operation="reverse")
    assert (await raw.get(spec.LIST_PATH, auth=auth(terminal))).status_code == 200
    assert (await raw.get(spec.HEALTH_PATH)).status_code == 200
    response = await raw.post(
        "/v1/transactions/tx_0123456789abcdef01234567/reverse", auth=auth(terminal)
    )
    assert response.status_code == 500


async def test_health_and_ready_need_no_credentials(raw: httpx.AsyncClient) -> None:
    health = await raw.get(spec.HEALTH_PATH)
    assert health.status_code == 200 and isinstance(health.json()["status"], str)
    ready = (await raw.get(spec.READY_PATH)).json()
    assert isinstance(ready["status"], str)
    assert ready["deps"] and all(isinstance(d["status"], str) for d in ready["deps"].values())


async def test_ready_with_a_failed_dependency(raw: httpx.AsyncClient, sandbox: Sandbox) -> None:
    sandbox.configure(ready_failed_dependency="tax-authority")
    ready = await raw.get(spec.READY_PATH)
    assert ready.status_code == 503
    assert ready.json()["deps"]["tax-authority"]["status"] != "ok"
    assert (await raw.get(spec.HEALTH_PATH)).status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [*V1_CALLS, ("GET", spec.HEALTH_PATH), ("GET", spec.READY_PATH), ("GET", "/nope")],
)
async def test_no_cors_headers_and_a_date_on_every_response(
    raw: httpx.AsyncClient, terminal: TerminalCredentials, method: str, path: str
) -> None:
    origin = {"Origin": "https://evil.example", "Access-Control-Request-Method": method}
    for verb, creds in ((method, auth(terminal)), ("OPTIONS", None), ("OPTIONS", auth(terminal))):
        response = await raw.request(verb, path, headers=origin, auth=creds)
        assert not [h for h in response.headers if h.lower().startswith("access-control-")]
        assert parsedate_to_datetime(response.headers["date"]).tzinfo is not None
        if response.status_code >= 400 and response.status_code not in (422, 429):
            assert response.headers["content-type"] == spec.TEXT_CONTENT_TYPE
            assert response.text.endswith("\n") and "\n" not in response.text[:-1]


async def test_unknown_v1_path_still_needs_credentials(
    raw: httpx.AsyncClient, terminal: TerminalCredentials
) -> None:
    _assert_401(await raw.get("/v1/merchants"))
    response = await raw.get("/v1/merchants", auth=auth(terminal))
    assert_text_error(response, 404, "not found")


async def test_internal_failure_is_plain_500(
    raw: httpx.AsyncClient, sandbox: Sandbox, terminal: TerminalCredentials
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    sandbox.list_transactions = broken  # type: ignore[assignment,method-assign]
    response = await raw.get(spec.LIST_PATH, auth=auth(terminal))
    assert_text_error(response, 500, spec.ErrorText.INTERNAL_ERROR)
    assert "disk" not in response.text
    assert parsedate_to_datetime(response.headers["date"]).tzinfo is not None


async def test_a_slow_charge_commits_late_after_the_client_gave_up(
    live_url: str, sandbox: Sandbox, terminal: TerminalCredentials, wallet: WalletInfo
) -> None:
    """The hardest unclear case for the outbox: no answer in time, charged anyway."""
    sandbox.arm_fault("delay", seconds=0.6, operation="charge")
    async with httpx.AsyncClient(base_url=live_url) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.post(
                spec.CHARGE_PATH,
                json={"qrToken": wallet.qr_token, "amountMNT": 700},
                headers={spec.IDEMPOTENCY_HEADER: "late-1"},
                auth=auth(terminal),
                timeout=0.2,
            )
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000  # not yet
    for _ in range(50):
        if sandbox.wallet(wallet.wallet_id).balance_mnt != 1_000_000:
            break
        await asyncio.sleep(0.05)
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 1_000_000 - 700
    assert [t.amount_mnt for t in sandbox.transactions() if t.type == "CHARGE"] == [700]
