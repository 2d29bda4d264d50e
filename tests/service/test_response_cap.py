"""A reply larger than any legal one is cut off and treated as garbled, not read whole.

A raw asyncio server on loopback streams an endless body; the client must stop near
`RESPONSE_MAX_BYTES` (counted on the server's side and by tracemalloc on ours), and
the outcome must be the garbled-reply one (a charge stays Unresolved: it may have
committed). A legal page of 1000 long rows still goes through.
"""

from __future__ import annotations

import asyncio
import json
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from qrpos.service import Page, TerminalClient, Unresolved
from qrpos.service.limits import RESPONSE_MAX_BYTES

#: what the hostile server offers: far beyond the cap
OFFERED = 16 * RESPONSE_MAX_BYTES
CHUNK = 64 * 1024


@dataclass
class Hostile:
    """What the server sent, and how it frames the body."""

    status: int
    framing: str  # "chunked" | "length" | "close"
    body: bytes | None = None  # None: an endless run of spaces
    sent: int = 0
    url: str = ""
    done: list[bool] = field(default_factory=list)


async def _serve(
    state: Hostile, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        await reader.readuntil(b"\r\n\r\n")
        size = OFFERED if state.body is None else len(state.body)
        head = [f"HTTP/1.1 {state.status} X", "Content-Type: application/json"]
        if state.framing == "chunked":
            head.append("Transfer-Encoding: chunked")
        elif state.framing == "length":
            head.append(f"Content-Length: {size}")
        else:
            head.append("Connection: close")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        # the endless body is one reused chunk: the server's memory stays out of the peak
        blank = b" " * CHUNK
        for start in range(0, size, CHUNK):
            piece = blank if state.body is None else state.body[start : start + CHUNK]
            if state.framing == "chunked":
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            else:
                writer.write(piece)
            await writer.drain()
            state.sent += len(piece)
        if state.framing == "chunked":
            writer.write(b"0\r\n\r\n")
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass  # the client hung up: exactly what a capped client does
    finally:
        state.done.append(True)
        writer.close()


@pytest.fixture
async def hostile() -> AsyncIterator[Callable[[Hostile], Awaitable[TerminalClient]]]:
    servers: list[asyncio.Server] = []
    clients: list[TerminalClient] = []

    async def start(state: Hostile) -> TerminalClient:
        server = await asyncio.start_server(
            lambda r, w: _serve(state, r, w), "127.0.0.1", 0, limit=1 << 16
        )
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        client = TerminalClient(f"http://127.0.0.1:{port}", "term_abcdefgh", "vpt_" + "s" * 32)
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.aclose()
    for server in servers:
        server.close()
        await server.wait_closed()


async def _traced(call: Awaitable[object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = await call
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.parametrize("framing", ["chunked", "length", "close"])
@pytest.mark.parametrize("status", [201, 200, 400, 422, 500])
async def test_oversized_charge_reply_is_unresolved_and_not_read_whole(
    hostile: Callable[[Hostile], Awaitable[TerminalClient]], status: int, framing: str
) -> None:
    state = Hostile(status=status, framing=framing)
    client = await hostile(state)
    outcome, peak = await _traced(client.charge("vqr_" + "a" * 20, 500, str(uuid.uuid4())))
    assert isinstance(outcome, Unresolved), outcome
    assert "garbled" in outcome.reason and "larger than" in outcome.reason
    # bounded by the cap (twice: the chunks and their join), not by what was offered
    assert peak < 3 * RESPONSE_MAX_BYTES, peak
    await asyncio.sleep(0)
    assert state.sent < OFFERED / 2, state.sent


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_oversized_page_is_an_error_the_caller_sees(
    hostile: Callable[[Hostile], Awaitable[TerminalClient]], framing: str
) -> None:
    state = Hostile(status=200, framing=framing)
    client = await hostile(state)
    outcome, peak = await _traced(client.list_page(limit=1000))
    assert isinstance(outcome, Unresolved) and "larger than" in outcome.reason
    assert peak < 3 * RESPONSE_MAX_BYTES, peak


async def test_the_largest_legal_page_still_fits(
    hostile: Callable[[Hostile], Awaitable[TerminalClient]],
) -> None:
    row = {
        "id": "tx_" + "A" * 64,
        "amountMNT": 1_000_000,
        "status": "REVERSED",
        "type": "CHARGE",
        "vatReceiptID": "9" * 40,
        "vatStatus": "voided",
        "terminalID": "ter_" + "B" * 64,
        "createdAt": "2025-03-01T04:00:00.123456789Z",
    }
    rows = [dict(row, id=f"tx_{i:064d}") for i in range(1000)]
    body = json.dumps({"transactions": rows, "nextCursor": "c" * 512}, indent=2).encode()
    assert len(body) < RESPONSE_MAX_BYTES / 2
    client = await hostile(Hostile(status=200, framing="chunked", body=body))
    outcome = await client.list_page(limit=1000)
    assert isinstance(outcome, Page) and len(outcome.page.transactions) == 1000
