"""The OpenAPI 3.1 document: valid, shipped, served unauthenticated, and saying what the
spec says with `qrpos.spec`'s literals."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema_rs
import pytest
from schemathesis.specs.openapi.definitions import OPENAPI_31

from qrpos import spec
from qrpos.simulator.openapi import build_document, render, shipped_document

E = spec.ErrorText
DOC = build_document()
REVERSE = spec.REVERSE_PATH.replace("{tx_id}", "{txID}")

# The spec's status map (Errors), per operation: status -> the texts it lists.
STATUS_MAP: dict[tuple[str, str], dict[str, set[str]]] = {
    (spec.CHARGE_PATH, "post"): {
        "400": {E.INVALID_BODY, E.AMOUNT_NOT_POSITIVE},
        "401": {E.UNAUTHORIZED},
        "409": {E.TOKEN_USED},
        "5XX": {E.INTERNAL_ERROR},
    },
    (REVERSE, "post"): {
        "400": {E.INVALID_TX_ID},
        "401": {E.UNAUTHORIZED},
        "403": {E.FORBIDDEN},
        "404": {E.TX_NOT_FOUND},
        "409": {E.ALREADY_REVERSED},
        "5XX": {E.INTERNAL_ERROR},
    },
    (spec.LIST_PATH, "get"): {
        "400": {E.INVALID_FROM, E.INVALID_TO, E.FROM_AFTER_TO, E.INVALID_LIMIT},
        "401": {E.UNAUTHORIZED},
        "500": {E.INTERNAL_ERROR},
    },
}


def _resolve(node: Any) -> Any:
    """Follow local `$ref`s (one level at a time) within the document."""
    while isinstance(node, dict) and "$ref" in node:
        target: Any = DOC
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = DOC["components"]["schemas"][name]
    return schema


def test_the_document_is_valid_openapi_3_1() -> None:
    assert DOC["openapi"].startswith("3.1.")
    errors = list(jsonschema_rs.Draft202012Validator(OPENAPI_31).iter_errors(DOC))
    assert errors == []
    assert DOC["info"]["version"] == spec.API_VERSION == "1.0.0"


def test_the_shipped_file_is_the_document() -> None:
    assert shipped_document().decode("utf-8") == render(DOC), (
        "src/qrpos/simulator/openapi.json is stale: run python -m qrpos.simulator.openapi --write"
    )


async def test_the_sandbox_serves_it_without_credentials(raw: httpx.AsyncClient) -> None:
    response = await raw.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == spec.JSON_CONTENT_TYPE
    assert response.json() == json.loads(render(DOC))


def test_every_path_of_the_spec_and_no_other() -> None:
    assert set(DOC["paths"]) == {
        spec.CHARGE_PATH,
        REVERSE,
        spec.LIST_PATH,
        spec.HEALTH_PATH,
        spec.READY_PATH,
    }
    for path, item in DOC["paths"].items():
        for operation in item.values():
            authenticated = path.startswith("/v1/")
            assert (operation["security"] != []) is authenticated, path


def test_basic_auth_and_its_401() -> None:
    scheme = DOC["components"]["securitySchemes"]["terminalBasic"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "basic")
    unauthorized = DOC["components"]["responses"]["Unauthorized"]
    header = unauthorized["headers"]["WWW-Authenticate"]
    assert header["required"] and header["schema"]["const"] == spec.WWW_AUTHENTICATE


@pytest.mark.parametrize(("key", "statuses"), list(STATUS_MAP.items()))
def test_each_operation_lists_the_spec_statuses_and_texts(
    key: tuple[str, str], statuses: dict[str, set[str]]
) -> None:
    path, method = key
    responses = DOC["paths"][path][method]["responses"]
    for status, texts in statuses.items():
        media = _resolve(responses[status])["content"][spec.TEXT_CONTENT_TYPE]
        examples = {e["value"] for e in media["examples"].values()}
        assert examples == {t + "\n" for t in texts}, (path, status)
        assert _resolve(media["schema"]) == _schema("PlainTextError")
    too_many = _resolve(responses["429"])["content"][spec.JSON_CONTENT_TYPE]["schema"]
    assert _resolve(too_many)["properties"]["message"]["const"] == E.TOO_MANY_REQUESTS


def test_the_charge_request_and_its_limits() -> None:
    charge = DOC["paths"][spec.CHARGE_PATH]["post"]
    body = _resolve(charge["requestBody"]["content"][spec.JSON_CONTENT_TYPE]["schema"])
    assert body["additionalProperties"] is False
    assert set(body["required"]) == set(body["properties"]) == spec.CHARGE_REQUEST_FIELDS
    amount = body["properties"][spec.FIELD_AMOUNT]
    assert (amount["type"], amount["minimum"], amount["maximum"]) == (
        "integer",
        spec.AMOUNT_MIN_MNT,
        spec.AMOUNT_MAX_MNT,
    )
    assert body["properties"][spec.FIELD_QR_TOKEN]["pattern"] == "^" + spec.TOKEN_PREFIX
    (key,) = charge["parameters"]
    assert (key["name"], key["in"]) == (spec.IDEMPOTENCY_HEADER, "header")
    assert key["schema"]["maxLength"] == spec.IDEMPOTENCY_KEY_MAX_LEN
    decline = _resolve(charge["responses"]["422"]["content"][spec.JSON_CONTENT_TYPE]["schema"])
    assert decline["required"] == ["code"]


def test_the_list_parameters_and_page() -> None:
    listing = DOC["paths"][spec.LIST_PATH]["get"]
    params = {p["name"]: p for p in listing["parameters"]}
    assert set(params) == {"from", "to", "cursor", "limit"}
    assert all(p["in"] == "query" and not p["required"] for p in params.values())
    assert params["from"]["schema"]["format"] == params["to"]["schema"]["format"] == "date-time"
    limit = params["limit"]["schema"]
    assert (limit["minimum"], limit["default"]) == (1, spec.LIST_LIMIT_DEFAULT)
    assert "maximum" not in limit  # a larger value is clamped, not refused
    assert limit["x-clamped-to"] == spec.LIST_LIMIT_MAX
    page = _schema("TransactionPage")
    assert page["required"] == ["transactions", "nextCursor"]
    assert page["properties"]["transactions"]["maxItems"] == spec.LIST_LIMIT_MAX


def test_the_transaction_fields_and_enums() -> None:
    tx = _schema("Transaction")
    assert set(tx["properties"]) == {
        "id",
        spec.FIELD_AMOUNT,
        "status",
        "type",
        "vatReceiptID",
        "vatStatus",
        "terminalID",
        "createdAt",
    }
    assert set(tx["required"]) == set(tx["properties"]) - {"vatStatus", "terminalID"}
    assert tx["properties"]["status"]["enum"] == [s.value for s in spec.TxStatus]
    assert tx["properties"]["type"]["enum"] == [t.value for t in spec.TxType]
    assert tx["properties"]["vatStatus"]["enum"] == [v.value for v in spec.VatStatus]
    assert tx["properties"]["id"]["pattern"] == "^" + spec.TX_PREFIX
    assert tx["properties"]["terminalID"]["pattern"] == "^" + spec.TERMINAL_PREFIX
    created = _schema("ChargeResult")["allOf"][1]["properties"]
    assert created["status"]["const"] == spec.TxStatus.COMPLETED
    assert created["vatStatus"]["const"] == spec.VatStatus.PENDING
    assert created["vatReceiptID"]["const"] == ""


def test_the_probes() -> None:
    for path in (spec.HEALTH_PATH, spec.READY_PATH):
        assert set(DOC["paths"][path]["get"]["responses"]) == {"200", "429"}
    ready = _schema("Readiness")
    assert set(ready["required"]) == {"status", "deps"}
    assert _schema("Health")["required"] == ["status"]
