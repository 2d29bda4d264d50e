"""The world a fault campaign runs in (`fault_campaign.py`): the sandbox with the faults
it fires and the outages it starts, the second install's fault-free front door, and the
kiosk's own `qrpos` processes (with a systemd credential) that a campaign kills."""

from __future__ import annotations

import contextvars
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from campaign_judge import Sale
from qrpos import spec
from qrpos.simulator import Sandbox, SimulatorOptions
from qrpos.simulator.faults import Fault, make_fault
from qrpos.simulator.model import Reply, Terminal

#: the client's timeout in the campaign (late commits past it are honoured)
CLIENT_TIMEOUT_S = 0.5

#: the service calls an outage stops unless it names fewer
SERVICE_CALLS = ("charge", "reverse", "list")

#: requests through this front door never meet a fault (the second install's)
_FAULTLESS: contextvars.ContextVar[bool] = contextvars.ContextVar("faultless", default=False)


class CampaignSandbox(Sandbox):
    """The sandbox plus what a campaign needs: which sale a fault hit and when, and an
    outage ("no answer for a while") that starts when a chosen fault fires."""

    def __init__(self, options: SimulatorOptions) -> None:
        super().__init__(options)
        self.current: Sale | None = None
        self._outage_next: tuple[float, str, tuple[str, ...]] | None = None
        self._outage_until = 0.0
        self._outage_kind = "error_before_commit"
        self._outage_ops: tuple[str, ...] = SERVICE_CALLS
        #: when each charge was reversed (monotonic), by transaction id: a refund's time
        #: to land is read from the service's side, not from what the kiosk believes
        self.reversed_at: dict[str, float] = {}

    def outage_after_next_fault(
        self, seconds: float, kind: str, operations: tuple[str, ...] = SERVICE_CALLS
    ) -> None:
        """When the next armed fault fires, every request of `operations` (the charge,
        the refund and the history by default) fails `kind` for `seconds`."""
        with self.lock:
            self._outage_next = (seconds, kind, operations)

    def end_outage(self) -> None:
        with self.lock:
            self._outage_next, self._outage_until = None, 0.0

    def outage_left_s(self) -> float:
        """How long the outage under way still lasts (0: none)."""
        with self.lock:
            return max(0.0, self._outage_until - time.monotonic())

    def reverse(self, terminal: Terminal, tx_id: str) -> Reply:
        reply = super().reverse(terminal, tx_id)
        if reply.status == spec.REVERSE_SUCCESS_STATUS:
            self.reversed_at.setdefault(tx_id, time.monotonic())
        return reply

    def take_fault(self, operation: str, kinds: tuple[str, ...] | None = None) -> Fault | None:
        if _FAULTLESS.get():
            return None
        with self.lock:
            now = time.monotonic()
            outage = now < self._outage_until and operation in self._outage_ops
            if outage and (kinds is None or self._outage_kind in kinds):
                fault = make_fault(self._outage_kind, seconds=CLIENT_TIMEOUT_S + 0.3)
                self._fired(now, fault, "outage")
                return fault
            fault = super().take_fault(operation, kinds)
            if fault is not None:
                self._fired(now, fault, fault.kind)
                if self._outage_next is not None:
                    seconds, self._outage_kind, self._outage_ops = self._outage_next
                    self._outage_next, self._outage_until = None, now + seconds
                    self._fired(now + seconds, fault, "outage")
            return fault

    def _fired(self, now: float, fault: Fault, label: str) -> None:
        sale = self.current
        if sale is None:
            return
        end = now + (fault.seconds if fault.kind == "delay" else 0.0)
        if sale.first_fault is None:
            sale.first_fault = now
        sale.kinds.add(label)
        sale.last_fault = max(sale.last_fault or 0.0, end)


class FaultlessDoor:
    """A second front door to the same sandbox, where no fault fires."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        _FAULTLESS.set(True)
        await self.app(scope, receive, send)


def cli_env(base: Path, url: str, username: str, password: str) -> dict[str, str]:
    """The environment of a `qrpos` process: systemd credential, state dir, sandbox URL."""
    creds = base / "creds"
    creds.mkdir(exist_ok=True)
    (creds / "qrpos-password").write_text(password + "\n")
    (base / "config.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QRPOS_")}
    env.update(
        CREDENTIALS_DIRECTORY=str(creds),
        QRPOS_BASE_URL=url,
        QRPOS_USERNAME=username,
        QRPOS_STATE_DIR=str(base / "state"),
        QRPOS_CONFIG=str(base / "config.toml"),
        QRPOS_REQUEST_TIMEOUT=str(CLIENT_TIMEOUT_S),
    )
    return env


def repair_env(env: dict[str, str], username: str, password: str) -> None:
    """The `qrpos` processes of `env` are paired as `username` from now on: its systemd
    credential holds the new password (as deploy/provision.sh re-encrypts it)."""
    creds = Path(env["CREDENTIALS_DIRECTORY"])
    (creds / "qrpos-password").write_text(password + "\n")
    env["QRPOS_USERNAME"] = username


def qrpos(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "qrpos.cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def killed_sale(env: dict[str, str], amount: int, token: str, rng: random.Random) -> None:
    """Run `qrpos charge`, SIGKILL it at a random moment, then finish the sale."""
    proc = qrpos(env, "charge", "--amount", str(amount), "--token", token, "--deadline", "5")
    time.sleep(rng.uniform(0.2, 1.2))  # interpreter start-up is ~0.3-0.6 s
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    if rng.random() < 0.5:
        # run the same command again: it resumes the same sale
        again = qrpos(env, "charge", "--amount", str(amount), "--token", token, "--deadline", "5")
    else:
        again = qrpos(env, "outbox", "resolve", "--deadline", "5")
    again.wait(timeout=120)
