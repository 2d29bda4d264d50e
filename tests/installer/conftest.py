"""A real `qrpos simulator` process, as an installer would start the demo sandbox."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

#: short VAT delays so `qrpos verify` sees issued and voided within a test
VAT_DELAY_S = 0.5


@dataclass(frozen=True)
class LiveSimulator:
    url: str
    username: str
    password: str

    def new_wallet_token(self, balance_mnt: int = 10_000) -> str:
        """Test set-up through the sandbox's admin API (the commands never call it)."""
        reply = httpx.post(f"{self.url}/_sim/wallets", json={"balanceMNT": balance_mnt})
        reply.raise_for_status()
        return str(reply.json()["qrToken"])

    def credentials_dir(self, tmp_path: Path) -> Path:
        """A directory shaped like systemd's $CREDENTIALS_DIRECTORY."""
        directory = tmp_path / "credentials"
        directory.mkdir(mode=0o700, parents=True)
        (directory / "qrpos-password").write_text(self.password)
        return directory


@pytest.fixture(scope="module")
def live_simulator() -> Iterator[LiveSimulator]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "qrpos.cli", "simulator", "--port", "0",
         "--vat-delay", str(VAT_DELAY_S), "--no-rate-limit"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        for _ in range(100):
            try:
                httpx.get(f"{url}/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                import time

                time.sleep(0.1)
        reply = httpx.post(f"{url}/_sim/terminals", json={"merchant": "m_installer"})
        reply.raise_for_status()
        body = reply.json()
        yield LiveSimulator(url, body["username"], body["password"])
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def qrpos_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment with no keyring, no config file and no systemd credential, in
    English (what these tests read)."""
    env = {**os.environ, "HOME": str(tmp_path), "QRPOS_CONFIG": "", "QRPOS_LANGUAGE": "en",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}  # fmt: skip
    for name in ("CREDENTIALS_DIRECTORY", "QRPOS_BASE_URL", "QRPOS_USERNAME", "STATE_DIRECTORY"):
        env.pop(name, None)
    env.update(extra)
    return env
