"""The kiosk waits for the first NTP sync, bounded: a till without network still starts."""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text())
    return parser


def test_the_unit_wants_the_sync_wait_and_never_requires_it() -> None:
    kiosk = unit(ROOT / "systemd" / "qrpos.service")
    assert "systemd-time-wait-sync.service" in kiosk["Unit"]["Wants"]
    assert "systemd-time-wait-sync.service" in kiosk["Unit"]["After"]
    assert "Requires" not in kiosk["Unit"] or "time" not in kiosk["Unit"]["Requires"]


def test_the_sync_wait_is_bounded_and_installed() -> None:
    drop_in = ROOT / "systemd" / "systemd-time-wait-sync.service.d" / "qrpos-bounded.conf"
    timeout = unit(drop_in)["Service"]["TimeoutStartSec"]
    assert timeout.endswith("s") and 0 < int(timeout[:-1]) <= 120
    script = (ROOT / "deploy" / "install.sh").read_text()
    assert "systemd/systemd-time-wait-sync.service.d/qrpos-bounded.conf" in script
