"""The service contract as an OpenAPI 3.1 document, built from `qrpos.spec`.

The spec document (`terminal-charge-service.md`) is the source: every path, parameter,
limit, body and response it describes is here, and every literal (paths, limits, texts,
enums, the realm, the version) comes from `qrpos.spec`, so the document cannot drift from
the client and the sandbox. What the spec leaves "not shown" (the other fields of a 422,
a 404 on the charge, readiness when a dependency is down, `Retry-After`) is not promised.

The sandbox serves it at ``GET /openapi.json``; the same document ships as
``qrpos/simulator/openapi.json`` (``python -m qrpos.simulator.openapi`` rewrites it, and
a test fails when the two differ).
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from typing import Any

from qrpos import spec
from qrpos.simulator.openapi_components import (
    RESPONSES,
    json_response,
    ref,
    schemas,
    shared_responses,
    text_response,
)

OPENAPI_FILE = "openapi.json"
OPENAPI_VERSION = "3.1.0"
SECURITY_SCHEME = "terminalBasic"

E = spec.ErrorText


def _common(*, server_error: str) -> dict[str, Any]:
    return {
        "401": {"$ref": RESPONSES + "Unauthorized"},
        "429": {"$ref": RESPONSES + "TooManyRequests"},
        server_error: {"$ref": RESPONSES + "InternalError"},
    }


def _charge() -> dict[str, Any]:
    return {
        "operationId": "chargeByToken",
        "summary": "Charge a wallet by its single-use QR token",
        "description": "A timeout or a 5xx does not mean the charge failed: retry with the "
        "same Idempotency-Key, or look in the history before charging again.",
        "security": [{SECURITY_SCHEME: []}],
        "parameters": [
            {
                "name": spec.IDEMPOTENCY_HEADER,
                "in": "header",
                "required": False,
                "description": "Strongly recommended. A retry with the same key collapses into "
                "one payment; without it a retry is a separate payment.",
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": spec.IDEMPOTENCY_KEY_MAX_LEN,
                },
            }
        ],
        "requestBody": {
            "required": True,
            "description": f"At most {spec.MAX_BODY_BYTES} bytes of JSON; no other fields.",
            "content": {spec.JSON_CONTENT_TYPE: {"schema": ref("ChargeRequest")}},
        },
        "responses": {
            "201": json_response(
                "Approved, or the original transaction of a matched replay.",
                ref("ChargeResult"),
            ),
            "400": text_response(
                "Invalid JSON, a body over 1 MiB or an unknown field; or an amount out of range.",
                E.INVALID_BODY,
                E.AMOUNT_NOT_POSITIVE,
            ),
            "409": text_response(
                "The token was already spent (a duplicate too). Verify before charging again.",
                E.TOKEN_USED,
            ),
            "422": json_response("Declined for a specific reason.", ref("Decline")),
            **_common(server_error="5XX"),
        },
    }


def _reverse() -> dict[str, Any]:
    return {
        "operationId": "reverseCharge",
        "summary": "Reverse a charge in full",
        "description": "Safe to repeat. 204 and 409 both mean the refund landed.",
        "security": [{SECURITY_SCHEME: []}],
        "parameters": [
            {
                "name": "txID",
                "in": "path",
                "required": True,
                "schema": {"type": "string", "pattern": f"^{spec.TX_PREFIX}"},
                "description": "The transaction `id`.",
            }
        ],
        "responses": {
            "204": {"description": "Reversed; the wallet is credited with the full amount."},
            "400": text_response("Malformed id.", E.INVALID_TX_ID),
            "403": text_response("Another merchant's transaction, or not a charge.", E.FORBIDDEN),
            "404": text_response("No such id.", E.TX_NOT_FOUND),
            "409": text_response("Already reversed: treat as refunded.", E.ALREADY_REVERSED),
            **_common(server_error="5XX"),
        },
    }


def _list() -> dict[str, Any]:
    def when(name: str, description: str) -> dict[str, Any]:
        return {
            "name": name,
            "in": "query",
            "required": False,
            "description": description,
            "schema": {"type": "string", "format": "date-time"},
        }

    window_days = spec.LIST_DEFAULT_WINDOW.days
    return {
        "operationId": "listTransactions",
        "summary": "This terminal's charges, newest first",
        "description": "Only charges made by the calling terminal; scope comes from the "
        "credentials. `limit=1` answering 200 proves a username and password are live.",
        "security": [{SECURITY_SCHEME: []}],
        "parameters": [
            when("from", f"Start of the window, inclusive. Default: {window_days} days ago."),
            when("to", "End of the window. Default: now. Must not be earlier than `from`."),
            {
                "name": "cursor",
                "in": "query",
                "required": False,
                "description": "The `nextCursor` of the previous page. Opaque: its format is "
                "not part of the contract.",
                "schema": {"type": "string"},
            },
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "description": f"Rows per page. A value above {spec.LIST_LIMIT_MAX} is "
                f"clamped to {spec.LIST_LIMIT_MAX}.",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "default": spec.LIST_LIMIT_DEFAULT,
                    "x-clamped-to": spec.LIST_LIMIT_MAX,
                },
            },
        ],
        "responses": {
            "200": json_response(
                "A page; pass `nextCursor` until it is empty.", ref("TransactionPage")
            ),
            "400": text_response(
                "A malformed `from`, `to` or `limit`, or a window that runs backwards.",
                E.INVALID_FROM,
                E.INVALID_TO,
                E.FROM_AFTER_TO,
                E.INVALID_LIMIT,
            ),
            **_common(server_error="500"),
        },
    }


def _probe(operation_id: str, summary: str, schema: str) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": summary,
        "description": "Unauthenticated; says nothing about credentials.",
        "security": [],
        "responses": {
            "200": json_response("Up.", ref(schema)),
            # the gateway's ceiling covers the whole API (spec, Errors: 429 "all")
            "429": {"$ref": RESPONSES + "TooManyRequests"},
        },
    }


def build_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the Terminal Charge Service."""
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Terminal Charge Service",
            "version": spec.API_VERSION,
            "description": "A merchant terminal charges a meal-benefit wallet by the single-use "
            "QR token of its pass, reverses a charge, and lists its own charges. Amounts are "
            "whole tugrik (MNT). Paths under /v1 take HTTP Basic credentials of one terminal.",
        },
        "servers": [{"url": "/", "description": "{base_url}, HTTPS only in production"}],
        "paths": {
            spec.CHARGE_PATH: {"post": _charge()},
            spec.REVERSE_PATH.replace("{tx_id}", "{txID}"): {"post": _reverse()},
            spec.LIST_PATH: {"get": _list()},
            spec.HEALTH_PATH: {"get": _probe("health", "Liveness", "Health")},
            spec.READY_PATH: {"get": _probe("ready", "Readiness", "Readiness")},
        },
        "components": {
            "securitySchemes": {
                SECURITY_SCHEME: {
                    "type": "http",
                    "scheme": "basic",
                    "description": f"Username `{spec.USERNAME_PREFIX}` + "
                    f"{spec.USERNAME_SUFFIX_LEN} characters; password `{spec.PASSWORD_PREFIX}` + "
                    f'{spec.PASSWORD_SUFFIX_LEN} characters. Realm "{spec.AUTH_REALM}".',
                }
            },
            "schemas": schemas(),
            "responses": shared_responses(),
        },
    }


def render(document: dict[str, Any]) -> str:
    """The document as the shipped file holds it (stable key order, 2-space indent)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def shipped_document() -> bytes:
    """The `openapi.json` shipped in the package, as bytes."""
    return resources.files("qrpos.simulator").joinpath(OPENAPI_FILE).read_bytes()


def main(argv: list[str]) -> int:
    """``python -m qrpos.simulator.openapi [--write]``: print, or rewrite the shipped file."""
    text = render(build_document())
    if argv == ["--write"]:
        target = resources.files("qrpos.simulator").joinpath(OPENAPI_FILE)
        with resources.as_file(target) as path:
            path.write_text(text, encoding="utf-8")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
