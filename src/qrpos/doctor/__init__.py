"""`qrpos doctor`'s checks: one line each for an installer, every failure naming its fix.

Camera and its real fps, the decoder reading exact bytes, the state dir and the outbox's
integrity, the clock against the service's `Date` header, the credentials, `/health`,
`/ready` and `GET /v1/transactions?limit=1`. No Textual here; the CLI renders the table.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from qrpos import spec
from qrpos.config import Config
from qrpos.credentials import PROVISION_FIX, CredentialsMissing, find_password
from qrpos.doctor.devices import (
    BINARY_PROBE,
    check_camera,
    check_customer_display,
    check_decoder,
    check_handheld,
    check_printer,
)
from qrpos.doctor.table import Check, Status, check_name, render_table
from qrpos.present.i18n import t
from qrpos.present.words import words
from qrpos.said import os_reason
from qrpos.service import InsecureBaseURL, TerminalClient
from qrpos.service.outcomes import (
    CredentialsRejected,
    Exchange,
    Page,
    Probe,
    RateLimited,
    Unresolved,
)
from qrpos.statedir import probe_write

#: the device checks and the table live in doctor.devices and doctor.table; their
#: names stay importable from qrpos.doctor
__all__ = [
    "BINARY_PROBE",
    "Check",
    "Status",
    "check_camera",
    "check_customer_display",
    "check_decoder",
    "check_handheld",
    "check_name",
    "check_printer",
    "render_table",
]

#: a clock further off than this makes history windows and reports wrong
CLOCK_FAIL_S = 60.0
#: the `Date` header has whole seconds; beyond this it is worth a warning
CLOCK_WARN_S = 5.0


def service_fix(config: Config) -> str:
    """Check the network and the base URL where it was set (an option, the environment or
    the file: never a file that did not set it)."""
    return t("doctor.fix.service", where=config.base_url_from or "base_url")


def ntp_fix() -> str:
    """Turn on time sync (a Pi has no battery clock)."""
    return t("doctor.fix.ntp")


def pair_fix() -> str:
    """Pair the kiosk (provision.sh on a kiosk)."""
    return t("doctor.fix.pair", provision=PROVISION_FIX)


def check_state_dir(state_dir: Path) -> Check:
    """The outbox lives here: it must exist and take a synced write."""
    try:
        probe_write(state_dir)  # a fresh name, O_EXCL|O_NOFOLLOW: no planted link is followed
    except OSError as exc:
        return Check(
            "state dir",
            Status.FAIL,
            f"{state_dir}: {words(os_reason(exc))}",
            t("doctor.fix.state_dir", path=state_dir),
        )
    return Check("state dir", Status.OK, t("doctor.state_dir.ok", path=state_dir))


def check_outbox(path: Path) -> Check:
    """Open the outbox the way the kiosk does; report its integrity check."""
    from qrpos.ledger import Ledger, LedgerError

    try:
        ledger = Ledger.open(path)
    except LedgerError as exc:
        return Check("outbox", Status.FAIL, str(exc), t("doctor.fix.outbox"))
    try:
        if not ledger.integrity_ok:
            return Check(
                "outbox",
                Status.FAIL,
                ledger.integrity_message,
                t("doctor.fix.integrity", path=path),
            )
        return Check("outbox", Status.OK, t("doctor.outbox.ok", path=path))
    finally:
        ledger.close()
        hand_back_state_files(path.parent)


def other_install_fix() -> str:
    """What to do when another install charges with this terminal's credentials."""
    return t("doctor.fix.other_install")


def check_other_install(path: Path) -> Check:
    """Whether the outbox saw charges with these credentials that this kiosk never sent."""
    from qrpos.ledger import Ledger, LedgerError, recorded_foreign_activity

    try:
        ledger = Ledger.open(path)
    except LedgerError as exc:
        return Check("other install", Status.SKIP, str(exc))
    try:
        seen = recorded_foreign_activity(ledger)
    finally:
        ledger.close()
        hand_back_state_files(path.parent)
    if seen is None:
        return Check("other install", Status.OK, t("doctor.other_install.ok"))
    since = (seen.first_seen + spec.LOCAL_UTC_OFFSET).strftime("%Y-%m-%d %H:%M")
    return Check(
        "other install",
        Status.FAIL,
        t("doctor.other_install.seen", count=seen.count, since=since, tx=seen.tx_ids[0]),
        other_install_fix(),
    )


def hand_back_state_files(state_dir: Path) -> None:
    """Run as root, give files we created in the state dir back to the dir's owner.

    Otherwise an installer's `qrpos doctor` would leave a root-owned WAL file that the
    kiosk's user cannot open.
    """
    if os.geteuid() != 0:
        return
    try:
        owner = state_dir.stat()
    except OSError:
        return
    if owner.st_uid == 0:
        return
    for entry in state_dir.iterdir():
        try:
            st = entry.lstat()
            if st.st_uid == 0:
                os.lchown(entry, owner.st_uid, owner.st_gid)
        except OSError:
            continue


def clock_skew(exchange: Exchange) -> timedelta | None:
    """Server time minus ours at the middle of the exchange, when the server sent a Date."""
    if exchange.server_date is None or exchange.sent_at is None:
        return None
    midpoint = exchange.sent_at + timedelta(seconds=(exchange.elapsed_s or 0.0) / 2)
    return exchange.server_date - midpoint


def check_clock(exchange: Exchange) -> Check:
    """Compare our clock with the service's `Date` header."""
    skew = clock_skew(exchange)
    if skew is None:
        return Check("clock", Status.SKIP, t("doctor.clock.no_date"))
    seconds = skew.total_seconds()
    way = "doctor.clock.behind" if seconds > 0 else "doctor.clock.ahead"
    detail = t(way, seconds=f"{abs(seconds):.0f}")
    if abs(seconds) > CLOCK_FAIL_S:
        return Check("clock", Status.FAIL, detail, ntp_fix())
    if abs(seconds) > CLOCK_WARN_S:
        return Check("clock", Status.WARN, detail, ntp_fix())
    return Check("clock", Status.OK, t("doctor.clock.ok", seconds=f"{CLOCK_WARN_S:g}"))


async def service_checks(
    config: Config,
    env: Mapping[str, str] | None,
    client_factory: Callable[[str, str, str], TerminalClient],
) -> list[Check]:
    """credentials, /health, clock, /ready and the live-credentials check, in that order."""
    checks: list[Check] = []
    password: str | None = None
    if not config.username:
        checks.append(
            Check("credentials", Status.FAIL, t("doctor.credentials.no_username"), pair_fix())
        )
    else:
        try:
            password, source = find_password(config.username, env)
            found = t("doctor.credentials.ok", username=config.username, source=source)
            checks.append(Check("credentials", Status.OK, found))
        except CredentialsMissing as exc:
            checks.append(Check("credentials", Status.FAIL, str(exc), pair_fix()))
    names = ("/health", "clock", "/ready", "credentials live")
    if not config.base_url:
        fix, missing = t("doctor.fix.base_url"), t("doctor.no_base_url")
        return [*checks, *(Check(n, Status.FAIL, missing, fix) for n in names)]
    try:
        # the probes need no password; a placeholder keeps one client for all checks
        client = client_factory(config.base_url, config.username or "", password or "")
    except InsecureBaseURL as exc:
        return [*checks, *(Check(n, Status.FAIL, str(exc), service_fix(config)) for n in names)]
    async with client:
        health = await client.health()
        if isinstance(health, Probe):
            status = repr(health.body.get("status"))
            checks.append(Check("/health", Status.OK, t("doctor.probe.status", status=status)))
        else:
            checks.append(Check("/health", Status.FAIL, _why(health), service_fix(config)))
        checks.append(check_clock(health.exchange))
        checks.append(await _ready(client))
        checks.append(await _live(client, password, service_fix(config)))
    return checks


def _why(outcome: Any) -> str:
    if isinstance(outcome, Unresolved):
        return words(outcome.why)
    if isinstance(outcome, RateLimited):
        return t("doctor.busy")
    return getattr(outcome, "message", "") or t("doctor.refused")


async def _ready(client: TerminalClient) -> Check:
    ready = await client.ready()
    if not isinstance(ready, Probe):
        return Check("/ready", Status.FAIL, _why(ready), t("doctor.fix.not_ready"))
    deps = ready.body.get("deps")
    unhealthy = []
    if isinstance(deps, dict):
        for name, dep in deps.items():
            status = dep.get("status") if isinstance(dep, dict) else dep
            if str(status).lower() not in ("ok", "up", "healthy", "pass"):
                unhealthy.append(f"{name}={status}")
    status = str(ready.body.get("status", ""))
    if unhealthy or status.lower() not in ("ok", "up", "ready", "healthy", "pass"):
        detail = t("doctor.probe.status", status=repr(status))
        detail += f", {', '.join(unhealthy)}" if unhealthy else ""
        return Check("/ready", Status.WARN, detail, t("doctor.fix.problem"))
    count = len(deps) if isinstance(deps, dict) else 0
    return Check("/ready", Status.OK, t("doctor.probe.ready", status=repr(status), count=count))


async def _live(client: TerminalClient, password: str | None, fix: str) -> Check:
    if not password:
        return Check("credentials live", Status.SKIP, t("doctor.live.no_password"), pair_fix())
    outcome = await client.verify_credentials()
    if isinstance(outcome, Page):
        return Check("credentials live", Status.OK, "GET /v1/transactions?limit=1: 200")
    if isinstance(outcome, CredentialsRejected):
        return Check(
            "credentials live",
            Status.FAIL,
            t("doctor.live.rejected"),
            t("doctor.fix.rotate", provision=PROVISION_FIX),
        )
    return Check("credentials live", Status.FAIL, _why(outcome), fix)


async def run_checks(
    config: Config,
    *,
    env: Mapping[str, str] | None = None,
    camera_seconds: float = 2.0,
    skip_camera: bool = False,
    client_factory: Callable[[str, str, str], TerminalClient] | None = None,
) -> list[Check]:
    """Every check, in the order of the table."""
    if client_factory is None:

        def client_factory(base_url: str, username: str, password: str) -> TerminalClient:
            return TerminalClient(base_url, username, password, timeout_s=config.request_timeout_s)

    if skip_camera:
        camera = Check("camera", Status.SKIP, t("doctor.camera.skipped"))
    else:
        camera = await asyncio.to_thread(check_camera, config.scanner, camera_seconds)
    decoder_name = config.scanner.get("decoder")
    checks = [
        camera,
        await asyncio.to_thread(check_decoder, str(decoder_name) if decoder_name else None),
        check_handheld(config.scanner),
        await asyncio.to_thread(check_printer, config.printer),
        await asyncio.to_thread(check_customer_display, config.customer_display),
        check_state_dir(config.state_dir),
    ]
    if checks[-1].status is Status.OK:
        checks.append(await asyncio.to_thread(check_outbox, config.ledger_path))
        if checks[-1].status is Status.OK:
            checks.append(await asyncio.to_thread(check_other_install, config.ledger_path))
    else:
        checks.append(Check("outbox", Status.SKIP, t("doctor.outbox.no_dir"), checks[-1].fix))
    checks.extend(await service_checks(config, env, client_factory))
    return checks


#: a command in a detail or a fix: `qrpos` and its words and options
