"""The sandbox's admin API under `/_sim` (docs/service-contract.md): terminals, wallets,
VAT, faults.

Never part of the service contract and never called by the kiosk's production paths.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from qrpos.simulator.faults import make_fault
from qrpos.simulator.http import to_response
from qrpos.simulator.model import Reply

if TYPE_CHECKING:
    from qrpos.simulator.sandbox import Sandbox

Handler = Callable[[Request], Awaitable[Response]]


class _BadInput(Exception):
    pass


def _sandbox(request: Request) -> Sandbox:
    sandbox: Sandbox = request.app.state.sandbox
    return sandbox


async def _json_object(request: Request, *, optional: bool = False) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip() and optional:
        return {}
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nesting too deep: not ours
        raise _BadInput("body is not JSON") from None
    if not isinstance(obj, dict):
        raise _BadInput("body must be a JSON object")
    return obj


def _admin(handler: Handler) -> Handler:
    """Map bad input and unknown records to plain-text 400 / 404."""
    from qrpos.simulator.sandbox import SandboxError, UnknownRecord

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except UnknownRecord as exc:
            return to_response(Reply.error(404, str(exc)))
        except (_BadInput, SandboxError, ValueError, TypeError) as exc:
            return to_response(Reply.error(400, str(exc)))

    return wrapped


def _json(status: int, body: Any) -> Response:
    return to_response(Reply(status, json=body))


async def create_terminal(request: Request) -> Response:
    body = await _json_object(request, optional=True)
    creds = _sandbox(request).create_terminal(body.get("merchant", "m_demo"))
    return _json(
        201,
        {
            "username": creds.username,
            "password": creds.password,
            "terminalID": creds.terminal_id,
            "merchant": creds.merchant,
        },
    )


async def rotate_terminal(request: Request) -> Response:
    password = _sandbox(request).rotate_password(request.path_params["username"])
    return _json(200, {"password": password})


async def suspend_terminal(request: Request) -> Response:
    _sandbox(request).suspend_terminal(request.path_params["username"])
    return Response(status_code=204)


async def create_wallet(request: Request) -> Response:
    body = await _json_object(request)
    if "balanceMNT" not in body:
        raise _BadInput("balanceMNT is required")
    token = body.get("qrToken")
    if token is not None and not isinstance(token, str):
        raise _BadInput("qrToken must be a string")
    info = _sandbox(request).create_wallet(body["balanceMNT"], qr_token=token)
    return _json(201, {"walletID": info.wallet_id, "qrToken": info.qr_token})


async def get_wallet(request: Request) -> Response:
    info = _sandbox(request).wallet(request.path_params["wallet_id"])
    return _json(
        200,
        {
            "walletID": info.wallet_id,
            "balanceMNT": info.balance_mnt,
            "qrToken": info.qr_token,
            "suspended": info.suspended,
        },
    )


async def suspend_wallet(request: Request) -> Response:
    _sandbox(request).suspend_wallet(request.path_params["wallet_id"])
    return Response(status_code=204)


async def credit_wallet(request: Request) -> Response:
    body = await _json_object(request)
    tx = _sandbox(request).credit_wallet(request.path_params["wallet_id"], body.get("amountMNT", 0))
    return _json(201, tx.to_wire())


async def settle_vat(request: Request) -> Response:
    return _json(200, _sandbox(request).settle_vat())


async def arm_faults(request: Request) -> Response:
    """`{"kind": K, "count": N, "operation": OP, "seconds": S, "retryAfter": R,
    "bytesPerSecond": B}` or `{"faults": [...]}`; all are validated before any is armed."""
    body = await _json_object(request)
    specs = body.get("faults", [body])
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise _BadInput("faults must be a list of objects")
    faults = []
    for item in specs:
        renamed = {"retryAfter": "retry_after", "bytesPerSecond": "bytes_per_s"}
        params = {renamed.get(k, k): v for k, v in item.items() if k not in ("kind", "count")}
        faults.append(make_fault(str(item.get("kind")), item.get("count", 1), **params))
    sandbox = _sandbox(request)
    with sandbox.lock:
        for fault in faults:
            sandbox.faults.arm(fault)
        armed = [f.to_json() for f in sandbox.faults.armed()]
    return _json(201, {"armed": armed})


async def set_clock(request: Request) -> Response:
    """`{"offsetSeconds": N}`: the service's clock runs N seconds ahead (behind if < 0)."""
    body = await _json_object(request)
    offset = body.get("offsetSeconds")
    if not isinstance(offset, int | float) or isinstance(offset, bool):
        raise _BadInput("offsetSeconds must be a number")
    _sandbox(request).set_clock_offset(float(offset))
    return _json(200, {"offsetSeconds": _sandbox(request).options.clock_offset_s})


async def clear_faults(request: Request) -> Response:
    _sandbox(request).clear_faults()
    return Response(status_code=204)


async def list_all_transactions(request: Request) -> Response:
    """Every transaction of every terminal and kind, with merchant and wallet (debugging)."""
    rows = []
    for tx in _sandbox(request).transactions():
        row: dict[str, object] = msgspec.to_builtins(tx.to_wire())
        rows.append(row | {"merchant": tx.merchant, "walletID": tx.wallet_id})
    return _json(200, {"transactions": rows})


def admin_routes() -> list[Route]:
    """The `/_sim` routes."""
    return [
        Route("/_sim/terminals", _admin(create_terminal), methods=["POST"]),
        Route("/_sim/terminals/{username}/rotate", _admin(rotate_terminal), methods=["POST"]),
        Route("/_sim/terminals/{username}/suspend", _admin(suspend_terminal), methods=["POST"]),
        Route("/_sim/wallets", _admin(create_wallet), methods=["POST"]),
        Route("/_sim/wallets/{wallet_id}", _admin(get_wallet), methods=["GET"]),
        Route("/_sim/wallets/{wallet_id}/suspend", _admin(suspend_wallet), methods=["POST"]),
        Route("/_sim/wallets/{wallet_id}/credit", _admin(credit_wallet), methods=["POST"]),
        Route("/_sim/vat/settle", _admin(settle_vat), methods=["POST"]),
        Route("/_sim/faults", _admin(arm_faults), methods=["POST"]),
        Route("/_sim/faults", _admin(clear_faults), methods=["DELETE"]),
        Route("/_sim/clock", _admin(set_clock), methods=["POST"]),
        Route("/_sim/transactions", _admin(list_all_transactions), methods=["GET"]),
    ]
