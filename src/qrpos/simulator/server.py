"""Serving the sandbox with uvicorn, with a protocol that can really drop a connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from qrpos.simulator.http import DROP_EXTENSION, Receive, Scope, Send

log = logging.getLogger("qrpos.simulator")


class DroppingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a scope extension that aborts the TCP connection.

    The `drop_after_commit` fault calls it: the client sees the connection close with
    no response at all (as when a network path dies after the service committed).
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        inner = self.app

        def drop() -> None:
            if self.cycle is not None:
                # uvicorn then neither answers 500 nor logs a missing response.
                self.cycle.disconnected = True
            self.transport.abort()

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                extensions = dict(scope.get("extensions") or {})
                extensions[DROP_EXTENSION] = drop
                scope = {**scope, "extensions": extensions}
            await inner(scope, receive, send)

        self.app = app


def uvicorn_config(app: Any, host: str, port: int, *, log_level: str = "warning") -> uvicorn.Config:
    """The uvicorn settings the sandbox runs with (the app adds its own `Date`)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=DroppingH11Protocol,
        lifespan="off",
        log_level=log_level,
        access_log=False,
        date_header=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )


@contextlib.contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve `app` with uvicorn on `host:port` in a thread; yields the base URL.

    `port=0` picks a free port. Leaving the block stops the server and joins the thread.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn_config(app, host, bound_port))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="qrpos-sandbox", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError(f"the sandbox did not start on {host}:{bound_port}")
        time.sleep(0.005)
    shown = f"[{host}]" if ":" in host else host
    try:
        yield f"http://{shown}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
