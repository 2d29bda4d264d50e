"""The sandbox as an ASGI app: the service's routes behind a gateway layer that adds the
`Date` header, enforces the request ceiling and fires armed faults."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from qrpos import spec
from qrpos.simulator.admin import admin_routes
from qrpos.simulator.faults import retry_after_header
from qrpos.simulator.http import (
    DROP_EXTENSION,
    ConnectionDropped,
    Message,
    Receive,
    Scope,
    Send,
    http_date,
    idempotency_key,
    read_limited_body,
    send_reply,
    to_response,
    unauthorized,
)
from qrpos.simulator.model import Reply, Terminal
from qrpos.simulator.options import SimulatorOptions
from qrpos.simulator.sandbox import Sandbox

log = logging.getLogger("qrpos.simulator")

_REVERSE_RE = re.compile(r"^/v1/transactions/[^/]+/reverse$")
#: where the sandbox serves its OpenAPI document (not a path of the spec)
OPENAPI_PATH = "/openapi.json"
#: where the Gateway leaves the authenticated terminal for the route handlers
TERMINAL_SCOPE_KEY = "qrpos.terminal"
_AFTER_COMMIT = ("drop_after_commit", "error_after_commit", "trickle", "mismatched_reply")
_BEFORE_COMMIT = ("rate_limit", "delay", "error_before_commit", "forbidden")


def _needs_auth(path: str) -> bool:
    """Every `/v1` path, known or not, with or without a trailing slash."""
    return path == "/v1" or path.startswith("/v1/")


def _operation(method: str, path: str) -> str | None:
    """Which service operation a request is, for faults; None for admin calls."""
    if path.startswith("/_sim"):
        return None
    if path == spec.CHARGE_PATH and method == "POST":
        return "charge"
    if _REVERSE_RE.match(path) and method == "POST":
        return "reverse"
    if path == spec.LIST_PATH and method == "GET":
        return "list"
    if path == spec.HEALTH_PATH:
        return "health"
    if path == spec.READY_PATH:
        return "ready"
    return "other"


class DateHeader:
    """Outermost layer: every response carries `Date`, even a crash's 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope.get("app")
        sandbox = getattr(getattr(app, "state", None), "sandbox", None)
        offset = sandbox.options.clock_offset_s if sandbox is not None else 0.0

        async def send_dated(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                headers.append((b"date", http_date(offset).encode("ascii")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_dated if scope["type"] == "http" else send)


class SandboxApp(Starlette):
    """Starlette with `DateHeader` around its whole stack (error middleware included)."""

    def build_middleware_stack(self) -> ASGIApp:
        return DateHeader(super().build_middleware_stack())


class Gateway:
    """Pure ASGI layer in front of the routes (a gateway, as in production)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sandbox: Sandbox = scope["app"].state.sandbox
        operation = _operation(scope["method"], scope["path"])

        if operation is None:
            await self.app(scope, receive, send)
            return
        while (fault := sandbox.take_fault(operation, _BEFORE_COMMIT)) is not None:
            if fault.kind == "delay":
                # a slow server, not a dead one: it has the request and goes on to commit
                # it even if the caller has hung up by then (the "late commit" case). Faults
                # armed meanwhile are for the requests that follow (a retry's 500, say),
                # not for this one: once it has waited, it commits
                receive = await _buffered(receive)
                await asyncio.sleep(fault.seconds)
                break
            if fault.kind == "rate_limit":
                await send_reply(_too_many(fault.retry_after), scope, receive, send)
                return
            if fault.kind == "forbidden":
                reply = Reply.error(403, spec.ErrorText.FORBIDDEN)
                await send_reply(reply, scope, receive, send)
                return
            await send_reply(Reply.error(500, spec.ErrorText.INTERNAL_ERROR), scope, receive, send)
            return
        wait = sandbox.admit()
        if wait is not None:
            retry = wait if sandbox.options.rate_retry_after else None
            await send_reply(_too_many(retry), scope, receive, send)
            return
        if _needs_auth(scope["path"]):
            # Authentication comes before routing: no redirect, 404 or 405 for a stranger.
            terminal = sandbox.authenticate(_header(scope, b"authorization"))
            if terminal is None:
                await unauthorized()(scope, receive, send)
                return
            scope = {**scope, TERMINAL_SCOPE_KEY: terminal}
        after = sandbox.take_fault(operation, _AFTER_COMMIT)
        if after is None:
            await self.app(scope, receive, send)
            return
        if after.kind == "trickle":
            await self.app(scope, receive, _trickling(send, receive, after.bytes_per_s))
            return
        if after.kind == "mismatched_reply":
            await self.app(scope, receive, _mismatching(send))
            return

        async def swallow(message: Message) -> None:
            """The committed answer goes nowhere: it is the one the client never gets."""

        await self.app(scope, receive, swallow)
        if after.kind == "error_after_commit":
            reply = Reply.error(500, spec.ErrorText.INTERNAL_ERROR)
            await send_reply(reply, scope, receive, send)
            return
        drop = scope.get("extensions", {}).get(DROP_EXTENSION)
        if drop is None:
            raise ConnectionDropped(
                "drop_after_commit fired but this server cannot drop connections; "
                "serve with qrpos.simulator.serve_in_thread or use asgi_transport"
            )
        log.info("fault: dropping the connection after commit (%s)", operation)
        drop()


def _header(scope: Scope, name: bytes) -> str | None:
    """The first value of a request header, as Starlette reads it (latin-1)."""
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            text: str = value.decode("latin-1")
            return text
    return None


def _mismatching(send: Send) -> Send:
    """A `send` that passes a 201 on with its body's `amountMNT` changed by one tugrik
    (the charge itself stays applied as asked): the reply does not match its request."""
    start: Message | None = None
    body = b""

    async def send_other(message: Message) -> None:
        nonlocal start, body
        if message["type"] == "http.response.start":
            start = message
            return
        body += message.get("body", b"")
        if message.get("more_body", False):
            return
        assert start is not None
        if start["status"] == 201:
            data = json.loads(body)
            data["amountMNT"] = int(data["amountMNT"]) + 1
            body = json.dumps(data, separators=(",", ":")).encode()
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return send_other


def _trickling(send: Send, receive: Receive, bytes_per_s: float) -> Send:
    """A `send` that passes the status and headers on at once, then the body a few bytes
    at a time at `bytes_per_s`, until the body ends or the client hangs up."""
    chunk = max(1, int(bytes_per_s / 10))  # ten writes a second at most
    pause = chunk / bytes_per_s

    async def hung_up() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass  # the rest of a request body the app did not read

    async def send_slowly(message: Message) -> None:
        if message["type"] != "http.response.body":
            await send(message)
            return
        body: bytes = message.get("body", b"")
        more = message.get("more_body", False)
        hang_up = asyncio.ensure_future(hung_up())
        try:
            for start in range(0, len(body), chunk):
                if hang_up.done():
                    return
                piece = body[start : start + chunk]
                await send({**message, "body": piece, "more_body": True})
                await asyncio.wait({hang_up}, timeout=pause)
            await send({**message, "body": b"", "more_body": more})
        finally:
            hang_up.cancel()

    return send_slowly


async def _buffered(receive: Receive) -> Receive:
    """Read the whole request body now; replay it to the app later, whatever the client
    has done meanwhile (a disconnect after the body is then seen only after it)."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break

    async def replay() -> Message:
        if messages:
            return messages.pop(0)
        return await receive()

    return replay


def _too_many(retry_after: float | None) -> Reply:
    headers: tuple[tuple[str, str], ...] = ()
    if retry_after is not None:
        headers = ((spec.RETRY_AFTER_HEADER, retry_after_header(retry_after)),)
    return Reply(429, json={"message": spec.ErrorText.TOO_MANY_REQUESTS}, headers=headers)


def _sandbox(request: Request) -> Sandbox:
    sandbox: Sandbox = request.app.state.sandbox
    return sandbox


def _terminal(request: Request) -> Terminal:
    """The terminal the Gateway authenticated for this `/v1` request."""
    terminal: Terminal = request.scope[TERMINAL_SCOPE_KEY]
    return terminal


async def _charge(request: Request) -> Response:
    sandbox, terminal = _sandbox(request), _terminal(request)
    body = await read_limited_body(request, spec.MAX_BODY_BYTES)
    return to_response(sandbox.charge(terminal, body, idempotency_key(request)))


async def _reverse(request: Request) -> Response:
    sandbox, terminal = _sandbox(request), _terminal(request)
    return to_response(sandbox.reverse(terminal, request.path_params["tx_id"]))


async def _list(request: Request) -> Response:
    sandbox, terminal = _sandbox(request), _terminal(request)
    query = {k: request.query_params[k] for k in request.query_params}
    return to_response(sandbox.list_transactions(terminal, query))


async def _health(request: Request) -> Response:
    return to_response(_sandbox(request).health())


async def _ready(request: Request) -> Response:
    return to_response(_sandbox(request).ready())


async def _openapi(request: Request) -> Response:
    """The contract as OpenAPI 3.1, unauthenticated (the file shipped in the package)."""
    from qrpos.simulator.openapi import shipped_document  # only when asked for

    return Response(shipped_document(), media_type=spec.JSON_CONTENT_TYPE)


async def _http_error(request: Request, exc: Exception) -> Response:
    """404 / 405 as plain-text lines (a `/v1` request got here only once authenticated)."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    text = {404: "not found", 405: "method not allowed"}.get(status, "bad request")
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
    response = to_response(Reply.error(status, text))
    response.headers.update(headers)
    return response


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("sandbox failure on %s %s", request.method, request.url.path)
    return to_response(Reply.error(500, spec.ErrorText.INTERNAL_ERROR))


def create_app(
    sandbox: Sandbox | None = None, options: SimulatorOptions | None = None
) -> Starlette:
    """The sandbox's ASGI app; its state is `app.state.sandbox` (swappable between tests).

    With only `options`, a fresh `Sandbox(options)` is made; with both, the sandbox
    takes those options.
    """
    if sandbox is None:
        sandbox = Sandbox(options)
    elif options is not None:
        sandbox.options = options
    routes: list[Any] = [
        Route(spec.CHARGE_PATH, _charge, methods=["POST"]),
        Route("/v1/transactions/{tx_id}/reverse", _reverse, methods=["POST"]),
        Route(spec.LIST_PATH, _list, methods=["GET"]),
        Route(spec.HEALTH_PATH, _health, methods=["GET"]),
        Route(spec.READY_PATH, _ready, methods=["GET"]),
        Route(OPENAPI_PATH, _openapi, methods=["GET"]),
        *admin_routes(),
    ]
    app = SandboxApp(
        routes=routes,
        middleware=[Middleware(Gateway)],
        exception_handlers={HTTPException: _http_error, Exception: _internal_error},
    )
    # No 307 to the slash-less path: an unknown path is a 404 (after authentication).
    app.router.redirect_slashes = False
    app.state.sandbox = sandbox
    return app
