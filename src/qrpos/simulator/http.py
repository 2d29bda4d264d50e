"""Turning the sandbox's replies into HTTP responses exactly as the spec shapes them."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from email.utils import formatdate
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from qrpos import spec
from qrpos.errors import QrposError
from qrpos.service.models import encode
from qrpos.simulator.model import Reply

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: ASGI scope extension through which the server lets the app drop the connection
DROP_EXTENSION = "qrpos.drop_connection"


class ConnectionDropped(QrposError, RuntimeError):
    """A drop fault fired on a server that cannot drop connections.

    `serve_in_thread`, `qrpos simulator` and `qrpos.simulator.testing.asgi_transport`
    all can; a plain uvicorn or `httpx.ASGITransport` cannot.
    """


def http_date(offset_s: float = 0.0) -> str:
    """The current time (shifted by the sandbox's clock offset) as an HTTP `Date` value."""
    return formatdate(time.time() + offset_s, usegmt=True)


def reply_body(reply: Reply) -> tuple[bytes, str | None]:
    """The body bytes and content type of a reply."""
    if reply.json is not None:
        return encode(reply.json), spec.JSON_CONTENT_TYPE
    if reply.text is not None:
        return (reply.text + "\n").encode("utf-8"), spec.TEXT_CONTENT_TYPE
    return b"", None


def to_response(reply: Reply) -> Response:
    """A Starlette response for a reply (401s carry the realm)."""
    body, content_type = reply_body(reply)
    headers = dict(reply.headers)
    if reply.status == 401:
        headers["WWW-Authenticate"] = spec.WWW_AUTHENTICATE
    if reply.status == 204:
        return Response(status_code=204, headers=headers)
    return Response(body, status_code=reply.status, headers=headers, media_type=content_type)


def unauthorized() -> Response:
    """The one 401 of every authentication failure."""
    return to_response(Reply.error(401, spec.ErrorText.UNAUTHORIZED))


async def send_reply(reply: Reply, scope: Scope, receive: Receive, send: Send) -> None:
    """Send a reply from raw ASGI code (the gateway layer)."""
    await to_response(reply)(scope, receive, send)


def idempotency_key(request: Request) -> str | None:
    """The `Idempotency-Key` as characters: its bytes read as UTF-8 (Starlette reads
    headers as latin-1, which made 200 `é` count as 400 characters).

    A byte that is not UTF-8 becomes a lone surrogate (``surrogateescape``), one
    character: distinct byte strings stay distinct keys, never folded onto each other.
    Repeated headers are one value joined with ", ", as HTTP combines them.
    """
    name = spec.IDEMPOTENCY_HEADER.lower().encode("ascii")
    values = [v for k, v in request.headers.raw if k.lower() == name]
    if not values:
        return None
    return b", ".join(values).decode("utf-8", "surrogateescape")


async def read_limited_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it exceeds `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
