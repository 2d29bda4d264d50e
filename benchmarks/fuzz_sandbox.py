"""Fuzz the sandbox against its own OpenAPI document with schemathesis, over real loopback.

Each operation of `/openapi.json` gets a share of the examples, half generated to match
the document (positive) and half to break it (negative). Every request carries a sandbox
terminal's Basic credentials; part of the positive cases are steered onto live state (a
wallet's current QR token, a real transaction id, a real cursor) so that charges,
reversals and paging really happen, not only their 4xx. Every response goes through
schemathesis's not_a_server_error, status_code_conformance, content_type_conformance and
response_schema_conformance, plus `documented_text`: a plain-text error is one of the
texts the document lists for that status, or one docs/sandbox.md lists as the sandbox's own.

    python benchmarks/fuzz_sandbox.py --examples 10000   # the campaign in docs/figures.md
    python benchmarks/fuzz_sandbox.py --quick            # 150 examples (run by the suite)

Prints how many examples ran per operation and mode, the statuses seen, and every distinct
failure; exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import base64
import collections
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import hypothesis
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from qrpos import spec
from qrpos.simulator import Sandbox, SimulatorOptions, TerminalCredentials, create_app
from qrpos.simulator.app import OPENAPI_PATH
from qrpos.simulator.model import INVALID_CURSOR_TEXT

E = spec.ErrorText
#: plain texts the sandbox may send beyond the spec's table (docs/sandbox.md)
SANDBOX_TEXTS: dict[int, set[str]] = {400: {INVALID_CURSOR_TEXT}, 404: {"not found"}}
#: share of the examples per operation that takes input
WEIGHTS = {"charge": 2.0, "list": 2.0, "reverse": 1.0}


@schemathesis.check
def documented_text(ctx: Any, response: Any, case: Any) -> bool | None:
    """A plain-text error says one of the texts documented for its status."""
    if not response.headers.get("content-type", [""])[0].startswith("text/plain"):
        return None
    definition = case.operation.definition.raw["responses"]
    status = str(response.status_code)
    entry = definition.get(status) or definition.get(status[0] + "XX") or {}
    entry = _resolve(case.operation.schema.raw_schema, entry)
    media = entry.get("content", {}).get(spec.TEXT_CONTENT_TYPE, {})
    allowed = {e["value"] for e in media.get("examples", {}).values()}
    allowed |= {t + "\n" for t in SANDBOX_TEXTS.get(response.status_code, set())}
    text = response.content.decode("utf-8", "replace")
    if text not in allowed:
        raise AssertionError(f"undocumented text for {status}: {text!r}")
    return None


#: texts that call an input malformed; a case generated to match the document never earns one
_MALFORMED = {
    spec.LIST_PATH: {E.INVALID_FROM, E.INVALID_TO, E.INVALID_LIMIT},
    spec.CHARGE_PATH: {E.AMOUNT_NOT_POSITIVE},
}


@schemathesis.check
def valid_input_not_refused(ctx: Any, response: Any, case: Any) -> bool | None:
    """A positive case (valid per the document) is not refused as malformed.

    Not applied: `invalid request body` (an integer written 5.0 is valid JSON Schema, but
    the sandbox wants a JSON integer) and `invalid transaction id` (the document says
    only that an id starts with tx_; its shape is the service's to judge).
    """
    if case.meta is None or case.meta.generation.mode is not GenerationMode.POSITIVE:
        return None
    text = response.content.decode("utf-8", "replace").rstrip("\n")
    if response.status_code == 400 and text in _MALFORMED.get(case.operation.path, set()):
        raise AssertionError(f"valid input refused: {text!r}")
    return None


@st.composite
def rfc3339_edges(draw: st.DrawFn) -> str:
    """Valid RFC 3339 date-times biased to where parsers break: years 0000/0001/9999 with
    offsets that cross them, leap seconds, 0..30 fractional digits, lower-case t/z."""
    year = draw(st.sampled_from([0, 1, 1969, 1970, 2000, 9999]) | st.integers(0, 9999))
    month = draw(st.sampled_from([1, 2, 12]) | st.integers(1, 12))
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    last = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    day = draw(st.sampled_from([1, last]) | st.integers(1, last))
    clock = draw(
        st.sampled_from(["00:00:00", "23:59:59", "23:59:60"])
        | st.times().map(lambda t: t.strftime("%H:%M:%S"))
    )
    fraction = draw(st.text("0123456789", max_size=30))
    zone = draw(
        st.sampled_from(["Z", "z", "+00:00", "-00:00", "+23:59", "-23:59", "+01:00", "-01:00"])
    )
    sep = draw(st.sampled_from("Tt"))
    return f"{year:04d}-{month:02d}-{day:02d}{sep}{clock}{'.' if fraction else ''}{fraction}{zone}"


schemathesis.openapi.format("date-time", rfc3339_edges())

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    documented_text,
    valid_input_not_refused,
]


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _kind(path: str) -> str:
    if path == spec.CHARGE_PATH:
        return "charge"
    if path == spec.LIST_PATH:
        return "list"
    if path.endswith("/reverse"):
        return "reverse"
    return "probe"


@dataclass
class LiveState:
    """The sandbox's live records the positive cases are steered onto."""

    sandbox: Sandbox
    terminal: TerminalCredentials
    rng: random.Random
    wallets: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, sandbox: Sandbox, seed: int) -> LiveState:
        terminal = sandbox.create_terminal("m_fuzz")
        state = cls(sandbox, terminal, random.Random(seed))
        state.wallets = [sandbox.create_wallet(10**12).wallet_id for _ in range(3)]
        now = datetime.now(UTC)
        edges = [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)]
        for i, moment in enumerate([*edges, *(now - timedelta(minutes=i) for i in range(30))]):
            sandbox.seed_charge(terminal.username, 1 + i, moment)
        return state

    def authorization(self) -> str:
        pair = f"{self.terminal.username}:{self.terminal.password}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    def steer(self, case: Any) -> None:
        """Point half of the positive cases at live records."""
        if case.meta.generation.mode is not GenerationMode.POSITIVE or self.rng.random() < 0.5:
            return
        kind = _kind(case.operation.path)
        if kind == "charge" and isinstance(case.body, dict) and spec.FIELD_QR_TOKEN in case.body:
            wallet = self.rng.choice(self.wallets)
            case.body[spec.FIELD_QR_TOKEN] = self.sandbox.wallet(wallet).qr_token
            amount = case.body.get(spec.FIELD_AMOUNT)
            if isinstance(amount, float):  # JSON Schema lets an integer be written 5.0
                case.body[spec.FIELD_AMOUNT] = int(amount)
        elif kind == "reverse":
            ids = [t.id for t in self.sandbox.transactions() if t.username]
            case.path_parameters["txID"] = self.rng.choice(ids)
        elif kind == "list" and "cursor" in case.query:
            terminal = self.sandbox.authenticate_basic(
                self.terminal.username, self.terminal.password
            )
            assert terminal is not None
            page = self.sandbox.list_transactions(terminal, {"limit": "1"})
            case.query["cursor"] = page.json["nextCursor"]


@dataclass
class Campaign:
    """What a run did: examples per (operation, mode), statuses, distinct failures."""

    examples: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.examples.values())


def plan(schema: Any, budget: int) -> list[tuple[Any, GenerationMode, int]]:
    """(operation, mode, examples) adding up to `budget`, shared by `WEIGHTS`.

    A probe takes no input: one positive example is all there is, and nothing to negate.
    """
    operations = [result.ok() for result in schema.get_all_operations()]
    probes = [op for op in operations if _kind(op.path) == "probe"]
    fuzzed = [op for op in operations if _kind(op.path) != "probe"]
    left = budget - len(probes)
    weight = sum(WEIGHTS[_kind(op.path)] for op in fuzzed) * 2
    shares = [int(left * WEIGHTS[_kind(op.path)] / weight) for op in fuzzed for _ in range(2)]
    for i in range(left - sum(shares)):  # what rounding left over, one each
        shares[i % len(shares)] += 1
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    out = [(op, GenerationMode.POSITIVE, 1) for op in probes]
    out += [
        (op, mode, n)
        for (op, mode), n in zip(
            [(op, mode) for op in fuzzed for mode in modes], shares, strict=True
        )
    ]
    return out


def run_campaign(
    schema: Any,
    state: LiveState,
    budget: int,
    seed: int,
    call: Callable[[Any, dict[str, str]], Any],
) -> Campaign:
    """Run about `budget` examples; `call(case, headers)` sends one and returns the response."""
    campaign = Campaign()
    headers = {"Authorization": state.authorization()}
    for operation, mode, examples in plan(schema, budget):
        _run_one(campaign, state, operation, mode, examples, seed, call, headers)
    return campaign


def _run_one(
    campaign: Campaign,
    state: LiveState,
    operation: Any,
    mode: GenerationMode,
    examples: int,
    seed: int,
    call: Callable[[Any, dict[str, str]], Any],
    headers: dict[str, str],
) -> None:
    label = f"{operation.label} [{mode.value}]"

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: Any) -> None:
        state.steer(case)
        response = call(case, headers)
        campaign.examples[label] += 1
        campaign.statuses[f"{label} {response.status_code}"] += 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (FailureGroup, Exception) as exc:  # every failure is recorded; the run goes on
            failures = exc.exceptions if isinstance(exc, FailureGroup) else (exc,)
            for failure in failures:
                title = getattr(failure, "title", type(failure).__name__)
                detail = (getattr(failure, "message", "") or str(failure)).strip()
                key = f"{label} {response.status_code}: {title}: {detail.splitlines()[0][:160]}"
                campaign.failures.setdefault(key, case.as_curl_command(headers=headers))

    hypothesis.seed(seed)(one)()


def report(campaign: Campaign, seconds: float) -> None:
    """Print the figures of a run."""
    print(f"examples run: {campaign.total} in {seconds:.0f} s")
    for label, count in sorted(campaign.examples.items()):
        print(f"  {count:6d}  {label}")
    print("statuses:")
    for label, count in sorted(campaign.statuses.items()):
        print(f"  {count:6d}  {label}")
    print(f"distinct failures: {len(campaign.failures)}")
    for key, curl in campaign.failures.items():
        print(f"  {key}\n    {curl[:400]}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--quick", action="store_true", help="150 examples")
    parser.add_argument("--db", type=Path, help="a persistent sandbox in this SQLite file")
    args = parser.parse_args(argv)
    budget = 150 if args.quick else args.examples

    from qrpos.simulator import serve_in_thread

    options = SimulatorOptions(rate_limit_enabled=False, vat_issue_delay_s=1.0, db_path=args.db)
    sandbox = Sandbox(options)
    state = LiveState.create(sandbox, args.seed)
    with serve_in_thread(create_app(sandbox)) as base_url:
        schema = schemathesis.openapi.from_url(base_url + OPENAPI_PATH)
        print(f"sandbox at {base_url}; schemathesis {schemathesis.__version__}; seed {args.seed}")

        def call(case: Any, headers: dict[str, str]) -> Any:
            return case.call(base_url=base_url, headers=headers, timeout=10)

        start = time.monotonic()
        campaign = run_campaign(schema, state, budget, args.seed, call)
        report(campaign, time.monotonic() - start)
    sandbox.close()
    return 1 if campaign.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
