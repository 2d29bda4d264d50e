"""Schemathesis fuzzes the sandbox against its OpenAPI document: in-process here (a
bounded number of examples), over loopback uvicorn in the benchmark's quick mode.

The longer campaign is `benchmarks/fuzz_sandbox.py --examples 10000` (docs/figures.md).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import schemathesis

from qrpos.simulator import Sandbox

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_sandbox.py"
IN_PROCESS_EXAMPLES = 400


def _fuzz_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_sandbox", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_sandbox"] = module
    spec.loader.exec_module(module)
    return module


def test_sandbox_conforms_to_its_document_in_process(sandbox: Sandbox, sim_app: Any) -> None:
    fuzz = _fuzz_module()
    schema = schemathesis.openapi.from_asgi("/openapi.json", sim_app)
    state = fuzz.LiveState.create(sandbox, seed=11)

    def call(case: Any, headers: dict[str, str]) -> Any:
        return case.call(headers=headers)

    campaign = fuzz.run_campaign(schema, state, IN_PROCESS_EXAMPLES, 11, call)
    fuzz.report(campaign, 0.0)
    assert campaign.failures == {}
    assert campaign.total >= IN_PROCESS_EXAMPLES * 0.9
    statuses = " ".join(campaign.statuses)
    # The steering reached the happy paths, not only their 4xx.
    for seen in ("charge-by-token [positive] 201", "reverse [positive] 204", "[positive] 200"):
        assert seen in statuses, statuses


def test_the_loopback_campaign_quick_mode_runs_clean() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "distinct failures: 0" in result.stdout
    ran = int(result.stdout.split("examples run: ")[1].split()[0])
    assert ran >= 140, result.stdout
