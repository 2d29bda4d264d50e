"""`qrpos simulator` serves the sandbox, prints its URL, and keeps state with --db."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from qrpos import spec


@contextmanager
def _simulator(*args: str) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "qrpos.cli", "simulator", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait_ready(url: str) -> None:
    for _ in range(200):
        try:
            httpx.get(url + spec.HEALTH_PATH, timeout=1).raise_for_status()
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("simulator did not answer /health")


def test_simulator_command_serves_and_persists_with_db(tmp_path: Path) -> None:
    db = tmp_path / "sim.db"
    with _simulator("--db", str(db), "--no-rate-limit", "--vat-delay", "0") as url:
        _wait_ready(url)
        creds = httpx.post(url + "/_sim/terminals", content=b'{"merchant":"m1"}').json()
        login = (creds["username"], creds["password"])
        response = httpx.get(url + spec.LIST_PATH, params={"limit": "1"}, auth=login)
        assert response.status_code == 200
    with _simulator("--db", str(db)) as url:
        _wait_ready(url)
        response = httpx.get(url + spec.LIST_PATH, params={"limit": "1"}, auth=login)
        assert response.status_code == 200  # the terminal survived the restart


def test_simulator_refuses_a_busy_port_clearly() -> None:
    with _simulator() as url:
        port = url.rsplit(":", 1)[1]
        _wait_ready(url)
        done = subprocess.run(
            [sys.executable, "-m", "qrpos.cli", "simulator", "--port", port],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "QRPOS_LANGUAGE": "en"},
        )
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
