"""The async client of the Terminal Charge Service.

One request per call, no retries: what to do after an unclear outcome is the ledger's
decision (it persists every attempt first). Every call returns an outcome value from
`qrpos.service.outcomes`; only programming errors raise.

Each request is bounded by one wall-clock deadline (`timeout_s`) from sending to the last
byte of the body, however slowly the bytes arrive. A status code becomes an outcome
through one table per operation (`qrpos.service.status`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from urllib.parse import quote, urlsplit

import httpx

from qrpos import spec
from qrpos.errors import InsecureBaseURL as InsecureBaseURL
from qrpos.errors import QrposError
from qrpos.redact import token_tail
from qrpos.said import say
from qrpos.service.contact import ContactLog
from qrpos.service.limits import CursorTrail, ResponseTooLarge, send_capped
from qrpos.service.models import (
    ChargeRequest,
    Transaction,
    encode,
    format_rfc3339,
)
from qrpos.service.outcomes import (
    ChargeOutcome,
    Exchange,
    ListOutcome,
    Page,
    ProbeOutcome,
    ReverseOutcome,
    Unresolved,
)
from qrpos.service.status import (
    CHARGE_STATUS,
    LIST_STATUS,
    PROBE_STATUS,
    REVERSE_STATUS,
    garbled,
    outcome_for,
    retry_after_of,
)

log = logging.getLogger("qrpos.service")


class ListingFailed(QrposError):
    """Paging through the history stopped on a non-200 outcome (carried in `outcome`)."""

    def __init__(self, outcome: ListOutcome) -> None:
        super().__init__(f"listing failed: {type(outcome).__name__}")
        self.outcome = outcome


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` itself and any literal address in 127.0.0.0/8 or ``::1``.

    Not ``*.localhost``: whether such a name stays on this machine is up to the
    resolver, and plain http must never depend on that.
    """
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(base_url: str) -> str:
    """Return the normalised base URL, or raise `InsecureBaseURL` with the fix."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise InsecureBaseURL(
            say(
                "error.url_not_http",
                "base URL {url} is not an http(s) URL; use https://host[:port]",
                url=repr(base_url),
            )
        )
    if parts.username or parts.password:
        raise InsecureBaseURL(
            say(
                "error.url_credentials",
                "the base URL must not carry credentials; pair the terminal",
            )
        )
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise InsecureBaseURL(
            say(
                "error.url_plain_http",
                "refusing plain http to {host}: the service is reached over HTTPS only (plain "
                "http is allowed for a loopback sandbox such as 127.0.0.1)",
                host=parts.hostname,
            )
        )
    return base_url.rstrip("/")


def _server_date(response: httpx.Response) -> datetime | None:
    raw = response.headers.get("date")
    if not raw:
        return None
    try:
        parsed = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class TerminalClient:
    """A terminal's view of the service: charge, reverse, list, and the two probes.

    The password lives only inside the `httpx.BasicAuth` of the underlying client; it
    is not an attribute, and `repr(client)` shows the username alone. `timeout_s` bounds
    each request as a whole (connect, send, every byte of the reply), not each read.
    """

    def __init__(
        self,
        base_url: str,
        username: str,
        password: str,
        *,
        timeout_s: float = spec.CLIENT_TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = check_base_url(base_url)
        self.username = username
        self.timeout_s = timeout_s
        #: what this client heard from the service (VAT follow-up backoff, metrics)
        self.contact = ContactLog()
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            auth=httpx.BasicAuth(username, password),
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
            verify=True,
            follow_redirects=False,
            headers={"User-Agent": "qrpos/0.1"},
        )

    def __repr__(self) -> str:
        return f"TerminalClient(base_url={self.base_url!r}, username={self.username!r})"

    async def __aenter__(self) -> TerminalClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- transport ----------------------------------------------------------------------

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json_body: ChargeRequest | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        auth: bool = True,
    ) -> tuple[httpx.Response | None, Exchange, Unresolved | None]:
        sent_at = datetime.now(UTC)
        start = time.monotonic()
        content = None if json_body is None else encode(json_body)
        all_headers = dict(headers or {})
        if content is not None:
            all_headers["Content-Type"] = spec.JSON_CONTENT_TYPE
        try:
            request = self._http.build_request(
                method, path, content=content, headers=all_headers, params=params
            )
            # httpx's timeout is per read: a reply trickled byte by byte never trips it.
            async with asyncio.timeout(self.timeout_s):
                response = await send_capped(self._http, request, auth=auth)
        except ResponseTooLarge as exc:
            # like a garbled body: a charge may have committed, only the history can tell
            exchange = Exchange(
                status=exc.status, sent_at=sent_at, elapsed_s=time.monotonic() - start
            )
            log.warning("%s %s: %s", method, path, exc)
            return None, exchange, garbled(exc, exchange)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            exchange = Exchange(sent_at=sent_at, elapsed_s=time.monotonic() - start)
            self.contact.no_answer()
            log.warning("%s %s: connection failed (%s)", method, path, type(exc).__name__)
            return (
                None,
                exchange,
                # the reason is for a person (a screen, a command's note): the exception's
                # class name stays in the log line above
                Unresolved.because(
                    say("unclear.cannot_connect", "cannot connect"), sent=False, exchange=exchange
                ),
            )
        except (httpx.TimeoutException, TimeoutError) as exc:
            exchange = Exchange(sent_at=sent_at, elapsed_s=time.monotonic() - start)
            self.contact.no_answer()
            log.warning("%s %s: no answer in time (%s)", method, path, type(exc).__name__)
            return (
                None,
                exchange,
                Unresolved.because(
                    say(
                        "unclear.no_answer_within",
                        "no answer within {seconds} s",
                        seconds=f"{self.timeout_s:g}",
                    ),
                    exchange=exchange,
                ),
            )
        except httpx.HTTPError as exc:
            exchange = Exchange(sent_at=sent_at, elapsed_s=time.monotonic() - start)
            self.contact.no_answer()
            log.warning("%s %s: transport failure (%s)", method, path, type(exc).__name__)
            return (
                None,
                exchange,
                Unresolved.because(
                    say("unclear.connection_lost", "connection lost"), exchange=exchange
                ),
            )
        self.contact.answered(response.status_code, retry_after_of(response))
        exchange = Exchange(
            status=response.status_code,
            server_date=_server_date(response),
            sent_at=sent_at,
            elapsed_s=time.monotonic() - start,
        )
        log.info(
            "%s %s -> %d in %.0f ms (user %s)",
            method,
            path,
            response.status_code,
            (exchange.elapsed_s or 0) * 1000,
            self.username,
        )
        return response, exchange, None

    # --- operations ---------------------------------------------------------------------

    async def charge(self, qr_token: str, amount_mnt: int, idempotency_key: str) -> ChargeOutcome:
        """POST charge-by-token with the token exactly as scanned."""
        if not 0 < len(idempotency_key) <= spec.IDEMPOTENCY_KEY_MAX_LEN:
            raise ValueError("Idempotency-Key must be 1..255 characters")
        # An HTTP header carries printable ASCII only; anything else is a caller's bug.
        if not (idempotency_key.isascii() and idempotency_key.isprintable()):
            raise ValueError("Idempotency-Key must be printable ASCII")
        log.info("charge %d MNT token %s key %s", amount_mnt, token_tail(qr_token), idempotency_key)
        response, exchange, failure = await self._send(
            "POST",
            spec.CHARGE_PATH,
            json_body=ChargeRequest(qr_token=qr_token, amount_mnt=amount_mnt),
            headers={spec.IDEMPOTENCY_HEADER: idempotency_key},
        )
        if failure is not None or response is None:
            return failure or Unresolved(reason="no response", exchange=exchange)
        return outcome_for(CHARGE_STATUS, response, exchange)

    async def reverse(self, tx_id: str) -> ReverseOutcome:
        """POST reverse for a transaction id; 204 and 409 both mean refunded."""
        log.info("reverse %s", tx_id)
        response, exchange, failure = await self._send(
            "POST", spec.REVERSE_PATH.format(tx_id=quote(tx_id, safe=""))
        )
        if failure is not None or response is None:
            return failure or Unresolved(reason="no response", exchange=exchange)
        return outcome_for(REVERSE_STATUS, response, exchange)

    async def list_page(
        self,
        *,
        from_: datetime | None = None,
        to: datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListOutcome:
        """One page of this terminal's transactions, newest first."""
        params: dict[str, str] = {}
        if from_ is not None:
            params["from"] = format_rfc3339(from_)
        if to is not None:
            params["to"] = format_rfc3339(to)
        if limit is not None:
            params["limit"] = str(limit)
        if cursor:
            params["cursor"] = cursor
        response, exchange, failure = await self._send("GET", spec.LIST_PATH, params=params)
        if failure is not None or response is None:
            return failure or Unresolved(reason="no response", exchange=exchange)
        return outcome_for(LIST_STATUS, response, exchange)

    async def iter_transactions(
        self,
        *,
        from_: datetime | None = None,
        to: datetime | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[Transaction]:
        """Every transaction in the window, newest first, fetched one page at a time.

        Raises `ListingFailed` (carrying the outcome) when a page cannot be had; the
        caller decides whether to back off and start again.
        """
        cursor: str | None = None
        trail = CursorTrail()
        while True:
            outcome = await self.list_page(from_=from_, to=to, limit=limit, cursor=cursor)
            if not isinstance(outcome, Page):
                raise ListingFailed(outcome)
            for tx in outcome.page.transactions:
                yield tx
            cursor = outcome.page.next_cursor
            if not cursor:
                return
            if (why := trail.follow(cursor)) is not None:
                raise ListingFailed(Unresolved(reason=why, exchange=outcome.exchange))

    async def verify_credentials(self) -> ListOutcome:
        """`GET /v1/transactions?limit=1`: a 200 proves the username and password live."""
        return await self.list_page(limit=1)

    async def _probe(self, path: str) -> ProbeOutcome:
        response, exchange, failure = await self._send("GET", path, auth=False)
        if failure is not None or response is None:
            return failure or Unresolved(reason="no response", exchange=exchange)
        return outcome_for(PROBE_STATUS, response, exchange)

    async def health(self) -> ProbeOutcome:
        """`GET /health` (no credentials): is the service up at all."""
        return await self._probe(spec.HEALTH_PATH)

    async def ready(self) -> ProbeOutcome:
        """`GET /ready` (no credentials): the service's own view of its dependencies."""
        return await self._probe(spec.READY_PATH)
