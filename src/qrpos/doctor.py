"""`qrpos doctor`'s checks: one line each for an installer, every failure naming its fix.

Camera and its real fps, the decoder reading exact bytes, the state dir and the outbox's
integrity, the clock against the service's `Date` header, the credentials, `/health`,
`/ready` and `GET /v1/transactions?limit=1`. No Textual here; the CLI renders the table.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from qrpos import spec
from qrpos.config import Config
from qrpos.credentials import PROVISION_FIX, CredentialsMissing, find_password
from qrpos.present.i18n import t, t_or
from qrpos.present.words import error_words, words
from qrpos.said import os_reason
from qrpos.scanner.handheld import keyboards
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

#: a clock further off than this makes history windows and reports wrong
CLOCK_FAIL_S = 60.0
#: the `Date` header has whole seconds; beyond this it is worth a warning
CLOCK_WARN_S = 5.0
#: bytes no text decoder survives unchanged: a charset guess would re-encode them
BINARY_PROBE = b"vqr_doctor-\xe9\xff\x00-binary"


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


class Status(StrEnum):
    """How one check came out."""

    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True)
class Check:
    """One line of the table: what was checked, how it went, and what to do."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        """The line as a JSON object for `qrpos doctor --json`."""
        return {"check": self.name, "status": str(self.status), "detail": self.detail,
                "fix": self.fix}  # fmt: skip


def check_camera(settings: Mapping[str, Any], seconds: float) -> Check:
    """Open the configured camera and count real frames for `seconds`."""
    from qrpos.scanner import probe_camera

    result = probe_camera(settings, seconds=seconds)
    if result.ok:
        return Check("camera", Status.OK, words(result.message))
    return Check("camera", Status.FAIL, words(result.message), t("doctor.fix.camera"))


def _qr_image(payload: bytes, scale: int = 6) -> np.ndarray[Any, np.dtype[np.uint8]]:
    import segno

    matrix = np.array(segno.make_qr(payload, mode="byte").matrix, dtype=bool)
    modules = np.pad(matrix, 4)  # the quiet zone the standard asks for
    image = np.where(modules, 0, 255).astype(np.uint8)
    return np.kron(image, np.ones((scale, scale), dtype=np.uint8))


def check_decoder(name: str | None) -> Check:
    """Load the decoder and prove it returns a QR's bytes exactly (binary mode)."""
    from qrpos.scanner import DecoderUnavailable, make_decoder

    try:
        decoder = make_decoder(name)
    except DecoderUnavailable as exc:
        return Check("decoder", Status.FAIL, str(exc), t("doctor.fix.decoder"))
    found = decoder.decode(_qr_image(BINARY_PROBE))
    if found == [BINARY_PROBE]:
        return Check("decoder", Status.OK, t("doctor.decoder.ok", name=decoder.name))
    key = "doctor.decoder.read_nothing" if not found else "doctor.decoder.altered"
    return Check("decoder", Status.FAIL, t(key, name=decoder.name), t("doctor.fix.binary"))


def check_handheld(settings: Mapping[str, Any], proc_devices: str | None = None) -> Check:
    """The handheld scanner `[scanner] handheld` names: there and readable by this user.
    Without one, the input devices that look like a scanner (`handheld.keyboards`)."""
    device = settings.get("handheld")
    if not device:
        found = [k for k in keyboards(proc_devices) if k.looks_like_a_scanner]
        if not found:
            return Check("handheld", Status.SKIP, t("doctor.handheld.none"))
        named = ", ".join(f"{k.name} ({k.path})" for k in found)
        return Check(
            "handheld",
            Status.SKIP,
            t("doctor.handheld.found", names=named),
            t("doctor.fix.handheld_set", path=found[0].path),
        )
    kind, _, where = str(device).partition(":")
    path = where.partition("@")[0]
    group = "input" if kind == "evdev" else "dialout"
    if kind not in ("evdev", "serial") or not path:
        return Check("handheld", Status.FAIL, t("doctor.handheld.bad", setting=str(device)))
    if not Path(path).exists():
        return Check(
            "handheld",
            Status.FAIL,
            t("doctor.handheld.missing", path=path),
            t("doctor.fix.handheld_plug"),
        )
    if not os.access(path, os.R_OK):
        return Check(
            "handheld",
            Status.FAIL,
            t("doctor.handheld.denied", path=path),
            t("doctor.fix.handheld_group", group=group),
        )
    return Check("handheld", Status.OK, t("doctor.handheld.ok", path=path))


def check_printer(settings: Mapping[str, Any]) -> Check:
    """The receipt printer `[printer]` / `QRPOS_PRINTER` names: reached, and its paper
    sensor read where it has one; nothing is printed (`qrpos print test` prints)."""
    from qrpos.peripherals.printer import PrinterSettingError, PrinterTrouble, open_port
    from qrpos.peripherals.printing import print_settings

    try:
        chosen = print_settings(settings)
        port = open_port(chosen.device)
    except PrinterSettingError as exc:
        return Check("printer", Status.FAIL, words(exc.said), t("doctor.fix.printer_set"))
    if port is None:
        return Check("printer", Status.SKIP, t("doctor.printer.none"))
    try:
        port.probe()
    except PrinterTrouble as exc:
        fix = "doctor.fix.printer_paper" if exc.said.key == "printer.no_paper" else None
        return Check(
            "printer",
            Status.FAIL,
            words(exc.said),
            t(fix) if fix else t("doctor.fix.printer_reach", group="lp"),
        )
    return Check(
        "printer", Status.OK, t("doctor.printer.ok", device=chosen.device, mm=chosen.paper_mm)
    )


def check_customer_display(
    settings: Mapping[str, Any], sys_drm: Path = Path("/sys/class/drm")
) -> Check:
    """The customer display `[customer_display]` / `QRPOS_CUSTOMER_DISPLAY` names: a pole
    display's port opens (nothing is sent); a screen's connector has a screen plugged in
    (read from sysfs: the kiosk may hold the screen now) and pykms is there."""
    from qrpos.peripherals.display_port import DisplayTrouble, load_pykms
    from qrpos.peripherals.display_settings import DisplaySettingError, display_settings
    from qrpos.said import say

    name = "customer display"
    try:
        chosen = display_settings(settings)
    except DisplaySettingError as exc:
        return Check(name, Status.FAIL, error_words(exc), t("doctor.display.fix"))
    if chosen.kind == "off":
        return Check(name, Status.SKIP, t("doctor.display.none"))
    try:
        if chosen.kind == "vfd":
            from qrpos.peripherals.pole import PoleSink

            PoleSink(chosen.target, chosen.baud, chosen.model).write(b"")
        else:
            # the connector named, never a pattern: `kms:*` must not find any screen
            statuses = sorted(
                card / "status"
                for card in sys_drm.glob("card*")
                if card.name.partition("-")[2] == chosen.target and (card / "status").is_file()
            )
            plugged = any(p.read_text().strip() == "connected" for p in statuses)
            if not plugged:
                raise DisplayTrouble(
                    say(
                        "display.connector",
                        "no connected screen on {connector}",
                        connector=chosen.target,
                    )
                )
            load_pykms()
    except (DisplayTrouble, OSError) as exc:
        return Check(name, Status.FAIL, error_words(exc), t("doctor.display.fix"))
    return Check(name, Status.OK, t("doctor.display.ok", device=chosen.device))


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
_COMMAND = re.compile(r"\bqrpos(?: (?:--)?[a-z][a-z-]*)+")
_NBSP = "\u00a0"


def check_name(check: Check) -> str:
    """The check's name in the current language (the JSON keeps the stable name)."""
    return t_or(f"doctor.name.{check.name}", check.name)


def render_table(checks: list[Check], columns: int = 80) -> str:
    """The installer's table in the current language: check, result, detail, and the fix
    under a failed line, each folded under its column to fit `columns` (a Pi's console
    has 80)."""
    import textwrap

    def word(status: Status) -> str:
        return t(f"cli.doctor.status.{status.name.lower()}")

    width = max(len(check_name(c)) for c in checks)
    status_width = max(len(word(s)) for s in Status)
    hang = " " * (width + status_width + 4)

    def fold(text: str, first: str) -> list[str]:
        width = max(columns, len(hang) + 20)
        # a command an installer types stays on one line when a line can hold it
        whole = _COMMAND.sub(
            lambda m: m[0].replace(" ", _NBSP) if len(m[0]) <= width - len(hang) else m[0],
            text,
        )
        return [
            line.replace(_NBSP, " ")
            for line in textwrap.wrap(
                whole,
                width=width,
                initial_indent=first,
                subsequent_indent=hang,
                break_long_words=False,
                break_on_hyphens=False,
            )
        ] or [first.rstrip()]

    lines = []
    for c in checks:
        lines += fold(c.detail, f"{check_name(c):<{width}}  {word(c.status):<{status_width}}  ")
        if c.fix and c.status in (Status.FAIL, Status.WARN, Status.SKIP):
            lines += fold(t("cli.doctor.fix", fix=c.fix), hang)
    return "\n".join(lines)
