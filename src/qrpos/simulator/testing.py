"""In-process use of the sandbox from httpx, faithful to what TCP would do."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx

from qrpos.simulator.http import DROP_EXTENSION, Message, Receive, Scope, Send

log = logging.getLogger("qrpos.simulator")


class _Dropped(Exception):
    pass


class SandboxTransport(httpx.AsyncBaseTransport):
    """`httpx.ASGITransport` plus two things a real socket does:

    - a `drop_after_commit` fault raises `httpx.RemoteProtocolError` (no response);
    - the client's read timeout applies (`httpx.ReadTimeout`), so `delay` faults time out.
    """

    def __init__(self, app: Any, *, client: tuple[str, int] = ("127.0.0.1", 50000)) -> None:
        self._app = app
        self._inner = httpx.ASGITransport(app=self._with_drop, client=client)

    async def _with_drop(self, scope: Scope, receive: Receive, send: Send) -> None:
        dropped = False

        def drop() -> None:
            nonlocal dropped
            dropped = True

        answered = False

        async def tracking_send(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.body" and not message.get("more_body"):
                answered = True
            await send(message)

        if scope["type"] == "http":
            extensions = {**(scope.get("extensions") or {}), DROP_EXTENSION: drop}
            scope = {**scope, "extensions": extensions}
        try:
            await self._app(scope, receive, tracking_send)
        except Exception:
            # Like a real server: an error after the response went out is only logged.
            if not answered:
                raise
            log.debug("sandbox app raised after answering", exc_info=True)
        if dropped:
            raise _Dropped

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {}).get("read")
        try:
            return await asyncio.wait_for(self._inner.handle_async_request(request), timeout)
        except _Dropped:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from None
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the response", request=request) from None

    async def aclose(self) -> None:
        await self._inner.aclose()


def asgi_transport(app: Any) -> httpx.AsyncBaseTransport:
    """An httpx transport serving `app` in-process, for `TerminalClient(transport=...)`."""
    return SandboxTransport(app)
