"""A hostile reply of hundreds of MB: what the client holds, with the cap and without.

A raw asyncio server on loopback answers every request with a body of N MB (chunked,
spaces). The figure is the peak of Python allocations (tracemalloc) while the client
handles one reply, as a ratio against the baseline measured in the same run: the same
reply read whole by httpx, as the client did before the cap (a 400 MB reply took a
client from 31 MB to 863 MB). Bytes the server got to send are reported too.

    python benchmarks/response_cap.py             # a 400 MB reply
    python benchmarks/response_cap.py --quick     # 32 MB (run by the test suite)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tracemalloc
from collections.abc import Awaitable, Callable

import httpx

from qrpos.service import TerminalClient, Unresolved
from qrpos.service.limits import RESPONSE_MAX_BYTES

CHUNK = 64 * 1024


async def _measure(size: int, call: Callable[[str], Awaitable[object]]) -> tuple[object, int, int]:
    sent = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
            blank = b" " * CHUNK
            for _ in range(size // CHUNK):
                writer.write(f"{CHUNK:x}\r\n".encode() + blank + b"\r\n")
                await writer.drain()
                sent += CHUNK
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass  # the capped client hung up (or the run ended): what this measures
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    tracemalloc.start()
    try:
        result = await call(url)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.close()
        await server.wait_closed()
    return result, peak, sent


async def _read_whole(url: str) -> object:
    async with httpx.AsyncClient() as http:
        return len((await http.get(f"{url}/v1/transactions")).content)


async def _capped(url: str) -> object:
    async with TerminalClient(url, "term_abcdefgh", "vpt_" + "s" * 32) as client:
        return await client.list_page(limit=1000)


async def run(size: int) -> int:
    whole, base_peak, base_sent = await _measure(size, _read_whole)
    outcome, peak, sent = await _measure(size, _capped)
    mb = 1024 * 1024
    print(f"reply size:                     {size / mb:.0f} MB")
    print(f"cap (RESPONSE_MAX_BYTES):       {RESPONSE_MAX_BYTES / mb:.2f} MB")
    print(f"read whole (baseline) peak:     {base_peak / mb:.1f} MB, {base_sent / mb:.0f} MB sent")
    print(f"capped client peak:             {peak / mb:.1f} MB, {sent / mb:.1f} MB sent")
    print(f"capped peak vs read whole:      {peak / base_peak:.3f}")
    print(f"outcome:                        {type(outcome).__name__}")
    ok = isinstance(outcome, Unresolved) and whole == size and peak < 3 * RESPONSE_MAX_BYTES
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=400, help="size of the hostile reply")
    parser.add_argument("--quick", action="store_true", help="a 32 MB reply")
    args = parser.parse_args(argv)
    return asyncio.run(run((32 if args.quick else args.mb) * 1024 * 1024))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
