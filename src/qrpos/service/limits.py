"""Bounds on what the service can make this client hold or wait for.

A hostile or broken server (or anything between) must not be able to exhaust a Pi's
memory with one reply, nor park a listing for an hour with one header. Both bounds are
derived here, once, and every caller takes them from here.
"""

from __future__ import annotations

import httpx

from qrpos import spec
from qrpos.errors import QrposError

# the one rule for a Retry-After lives with the contract's literals (pure, shared by the ledger)
from qrpos.spec import RETRY_AFTER_MAX_S as RETRY_AFTER_MAX_S
from qrpos.spec import bounded_retry_after as bounded_retry_after

#: A generous upper bound on one Transaction's JSON. The spec does not bound its string
#: fields, so this is measured, not quoted: a real row (`id`, `amountMNT` up to 19 digits,
#: `status`, `type`, a 30-odd character `vatReceiptID`, `vatStatus`, `terminalID`,
#: `createdAt` with fractional seconds, and the key names) is about 260 bytes compact and
#: under 400 pretty-printed; 1 KiB leaves room for longer identifiers.
TRANSACTION_JSON_MAX_BYTES = 1024
#: Headroom on top of the largest legal page, for fields the service may add later.
SAFETY_FACTOR = 4
#: The most bytes read from one response: the largest legal page (`limit` clamps at
#: 1000 rows) times the largest Transaction, times the safety factor, plus the cursor
#: and the envelope: 1000 × 1 KiB × 4 + 64 KiB ≈ 4.06 MB. A charge response (one
#: Transaction) and the error bodies (one line) are far smaller, so one cap serves all.
RESPONSE_MAX_BYTES = spec.LIST_LIMIT_MAX * TRANSACTION_JSON_MAX_BYTES * SAFETY_FACTOR + 65536


class ResponseTooLarge(QrposError):
    """The reply's body passed `RESPONSE_MAX_BYTES`; it was not read further."""

    def __init__(self, status: int, limit: int) -> None:
        super().__init__(f"HTTP {status} reply larger than {limit:,} bytes")
        self.status = status
        self.limit = limit


async def send_capped(
    http: httpx.AsyncClient,
    request: httpx.Request,
    *,
    auth: bool = True,
    limit: int = RESPONSE_MAX_BYTES,
) -> httpx.Response:
    """Send `request` and read at most `limit` bytes of the body, streaming.

    `auth=False` sends without the client's credentials (the probes). Raises
    `ResponseTooLarge` as soon as the body passes `limit` (the rest is never read
    and the connection is closed), so memory stays bounded whatever the server sends.
    The body is counted as decoded: we ask for `identity`, and a compressed reply is
    counted after inflation, so a small compressed bomb is refused too.
    """
    # a compressed body is counted only once inflated; ask for none at all
    request.headers["Accept-Encoding"] = "identity"
    response = await http.send(
        request, stream=True, auth=httpx.USE_CLIENT_DEFAULT if auth else None
    )
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ResponseTooLarge(response.status_code, limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise ResponseTooLarge(response.status_code, limit)
            chunks.append(chunk)
    finally:
        await response.aclose()
    return httpx.Response(
        response.status_code,
        headers=[(k, v) for k, v in response.headers.multi_items() if k.lower() not in _FRAMING],
        content=b"".join(chunks),
        request=request,
        extensions=response.extensions,
    )


#: headers that describe the wire framing of the original body, not the bytes we keep
_FRAMING = frozenset({"content-encoding", "transfer-encoding", "content-length"})


#: The most pages one listing follows. A terminal's busiest day is some tens of thousands
#: of charges (tens of pages of 1,000); a million rows is beyond any one till.
LISTING_MAX_PAGES = 1000


class CursorTrail:
    """The `nextCursor`s one listing has followed, so that a service whose pages never end
    (a cursor that comes back, or more than `max_pages` of them) cannot hold a caller, and
    the event loop, forever. `follow` answers why to stop, or None to go on."""

    def __init__(self, max_pages: int = LISTING_MAX_PAGES) -> None:
        self._seen: set[str] = set()
        self._max_pages = max_pages

    def follow(self, cursor: str) -> str | None:
        """None when `cursor` may be followed; otherwise why the listing cannot end."""
        if cursor in self._seen:
            return "garbled history: a page's cursor came back (the pages loop)"
        if len(self._seen) >= self._max_pages:
            return f"garbled history: the pages do not end (over {self._max_pages})"
        self._seen.add(cursor)
        return None
