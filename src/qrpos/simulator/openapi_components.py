"""The components of the OpenAPI document: the spec's resources, error bodies and the
responses every `/v1` operation shares. Every literal comes from `qrpos.spec`."""

from __future__ import annotations

from typing import Any

from qrpos import spec

E = spec.ErrorText
SCHEMAS = "#/components/schemas/"
RESPONSES = "#/components/responses/"


def ref(name: str) -> dict[str, str]:
    """A reference to a schema of the document."""
    return {"$ref": SCHEMAS + name}


def _line(text: str) -> str:
    """A plain-text error body as sent: the message and a trailing newline."""
    return text + "\n"


def text_response(description: str, *texts: str) -> dict[str, Any]:
    """A plain-text error response, its spec texts as examples."""
    media: dict[str, Any] = {"schema": ref("PlainTextError")}
    if texts:
        media["examples"] = {
            f"text{i}": {"summary": text, "value": _line(text)} for i, text in enumerate(texts, 1)
        }
    return {"description": description, "content": {spec.TEXT_CONTENT_TYPE: media}}


def json_response(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON response."""
    return {"description": description, "content": {spec.JSON_CONTENT_TYPE: {"schema": schema}}}


def schemas() -> dict[str, Any]:
    """`components.schemas`: the spec's resources and error bodies."""
    return {
        "Transaction": {
            "type": "object",
            "description": "The projection a terminal sees. Wallet, card, employer and "
            "merchant identifiers never appear.",
            "required": ["id", spec.FIELD_AMOUNT, "status", "type", "vatReceiptID", "createdAt"],
            "properties": {
                "id": {
                    "type": "string",
                    "pattern": f"^{spec.TX_PREFIX}",
                    "description": "Transaction identifier; the only handle for a reversal.",
                },
                spec.FIELD_AMOUNT: {
                    "type": "integer",
                    "format": "int64",
                    "minimum": spec.AMOUNT_MIN_MNT,
                    "description": "Whole tugrik, always positive. A reversal does not negate it.",
                },
                "status": {"type": "string", "enum": [s.value for s in spec.TxStatus]},
                "type": {
                    "type": "string",
                    "enum": [t.value for t in spec.TxType],
                    "description": "A terminal creates and lists only CHARGE.",
                },
                "vatReceiptID": {
                    "type": "string",
                    "description": "VAT receipt number; empty until issued, always empty in "
                    "a charge response, retained after reversal.",
                },
                "vatStatus": {
                    "type": "string",
                    "enum": [v.value for v in spec.VatStatus],
                    "description": "Only on CHARGE.",
                },
                "terminalID": {
                    "type": "string",
                    "pattern": f"^{spec.TERMINAL_PREFIX}",
                    "description": "Omitted for transactions created outside a terminal.",
                },
                "createdAt": {
                    "type": "string",
                    "format": "date-time",
                    "description": "RFC 3339 in UTC of the commit, with fractional seconds.",
                },
            },
        },
        "ChargeResult": {
            "description": "A new charge: COMPLETED, CHARGE, empty receipt, vatStatus pending.",
            "allOf": [
                ref("Transaction"),
                {
                    "required": ["vatStatus"],
                    "properties": {
                        "status": {"const": spec.TxStatus.COMPLETED.value},
                        "type": {"const": spec.TxType.CHARGE.value},
                        "vatReceiptID": {"const": ""},
                        "vatStatus": {"const": spec.VatStatus.PENDING.value},
                    },
                },
            ],
        },
        "TransactionPage": {
            "type": "object",
            "required": ["transactions", "nextCursor"],
            "properties": {
                "transactions": {
                    "type": "array",
                    "items": ref("Transaction"),
                    "maxItems": spec.LIST_LIMIT_MAX,
                    "description": "Newest first.",
                },
                "nextCursor": {
                    "type": "string",
                    "description": "Pass as `cursor` for the next page; empty when there "
                    "are no more pages.",
                },
            },
        },
        "ChargeRequest": {
            "type": "object",
            "required": [spec.FIELD_QR_TOKEN, spec.FIELD_AMOUNT],
            "additionalProperties": False,
            "properties": {
                spec.FIELD_QR_TOKEN: {
                    "type": "string",
                    "pattern": f"^{spec.TOKEN_PREFIX}",
                    "description": "The scanned code exactly as the scanner produced it: not "
                    "trimmed, parsed or altered. Single-use.",
                },
                spec.FIELD_AMOUNT: {
                    "type": "integer",
                    "format": "int64",
                    "minimum": spec.AMOUNT_MIN_MNT,
                    "maximum": spec.AMOUNT_MAX_MNT,
                    "description": "Whole tugrik.",
                },
            },
        },
        "PlainTextError": {
            "type": "string",
            "pattern": "^[^\\r\\n]+\\n$",
            "description": "A bare English message and a trailing newline. Branch on the "
            "status, never on the text.",
        },
        "Decline": {
            "type": "object",
            "required": ["code"],
            "properties": {"code": {"type": "string", "description": "Stable decline code."}},
            "description": "The set of codes and the other fields are not part of the contract.",
        },
        "TooManyRequests": {
            "type": "object",
            "required": ["message"],
            "properties": {"message": {"const": E.TOO_MANY_REQUESTS}},
            "description": "Produced by the gateway.",
        },
        "Health": {
            "type": "object",
            "required": ["status"],
            "properties": {"status": {"type": "string"}},
        },
        "Readiness": {
            "type": "object",
            "required": ["status", "deps"],
            "properties": {
                "status": {"type": "string"},
                "deps": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "required": ["status"],
                        "properties": {"status": {"type": "string"}},
                    },
                },
            },
        },
    }


def shared_responses() -> dict[str, Any]:
    """`components.responses`: the 401, 429 and 500 every `/v1` operation can answer."""
    unauthorized = text_response(
        "Any authentication failure (missing header, unknown user, wrong password, suspended "
        "terminal); the cases cannot be told apart. Stop and re-pair.",
        E.UNAUTHORIZED,
    )
    unauthorized["headers"] = {
        "WWW-Authenticate": {
            "required": True,
            "schema": {"type": "string", "const": spec.WWW_AUTHENTICATE},
        }
    }
    return {
        "Unauthorized": unauthorized,
        "TooManyRequests": json_response(
            "Gateway request ceiling hit: back off exponentially with jitter, then retry "
            "(with the same Idempotency-Key for a charge).",
            ref("TooManyRequests"),
        ),
        "InternalError": text_response(
            "Failure on the service side; the operation may or may not have been applied.",
            E.INTERNAL_ERROR,
        ),
    }
