"""deploy/ansible/site.yml keeps a till's own settings (issue 49): config.toml is written
from the inventory, every table of it, and a setting in the file that the inventory does
not carry stops the till's run instead of being dropped.

`ansible-playbook` runs site.yml for real (`--tags config`: the configuration's tasks) on
this machine as a local host, its config.toml in a temp dir; the inventory is laid out
as an operator's (inventory.ini, host_vars/<till>/config.yml). The seam mocked is
`systemctl`, a stand-in on PATH that logs what it is asked (the play restarts the kiosk
after a new configuration); the file is read back with qrpos's own `load_config`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from qrpos.config import load_config

ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
SITE = Path(__file__).resolve().parents[2] / "deploy" / "ansible" / "site.yml"
TILL = "till-ulaanbaatar-01"
CONFIG_TASK = "Configuration, every setting from the inventory"

FAKE_SYSTEMCTL = """#!/bin/sh
# systemctl for the kiosk's unit: logs each call beside itself, the unit loaded and active
echo "$*" >> "$(dirname "$0")/calls"
case "$1" in show) printf 'LoadState=loaded\\nActiveState=active\\n' ;; esac
"""


class Kiosk:
    """One till on this machine: its inventory, its config.toml and its systemctl."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "etc" / "qrpos" / "config.toml"
        self.config.parent.mkdir(parents=True)
        self.bin = root / "bin"
        self.bin.mkdir()
        (self.bin / "systemctl").write_text(FAKE_SYSTEMCTL)
        (self.bin / "systemctl").chmod(0o755)
        self.inventory = root / "inventory"
        (self.inventory / "host_vars" / TILL).mkdir(parents=True)
        (self.inventory / "inventory.ini").write_text(
            f"[kiosks]\n{TILL} ansible_connection=local"
            f" ansible_python_interpreter={sys.executable}\n\n"
            "[kiosks:vars]\nqrpos_base_url=https://pay.example.mn\n"
        )

    def host_vars(self, settings: dict[str, Any]) -> None:
        (self.inventory / "host_vars" / TILL / "config.yml").write_text(
            yaml.safe_dump(settings, allow_unicode=True)
        )

    def site(self, *extra: str) -> subprocess.CompletedProcess[str]:
        """site.yml's configuration tasks, as `ansible-playbook ... --tags config`."""
        return subprocess.run(
            [ANSIBLE_PLAYBOOK, "-i", str(self.inventory / "inventory.ini"), str(SITE),
             "--tags", "config", "-e", "ansible_become=false",
             "-e", f"qrpos_config={self.config}", "-e", f"qrpos_python={sys.executable}",
             "-e", f"qrpos_state_dir={self.root / 'state'}", *extra],
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}",
                 "ANSIBLE_NOCOLOR": "1", "ANSIBLE_HOME": str(self.root / "ansible"),
                 "ANSIBLE_LOCALHOST_WARNING": "false",
                 # the configuration's tasks use no facts: not gathered, a quicker run
                 "ANSIBLE_GATHERING": "explicit"},
        )  # fmt: skip

    def restarts(self) -> int:
        calls = self.bin / "calls"
        lines = calls.read_text().splitlines() if calls.exists() else []
        return lines.count("restart qrpos.service")


def changed(run: subprocess.CompletedProcess[str]) -> int:
    """The till's changed= in the play recap."""
    found = re.search(rf"^{TILL}\s*:.*\bchanged=(\d+)", run.stdout, re.MULTILINE)
    assert found, run.stdout
    return int(found.group(1))


def task_result(run: subprocess.CompletedProcess[str], task: str) -> str | None:
    """ok / changed / fatal ... for the till in TASK [task], None when it did not run."""
    part = run.stdout.split(f"TASK [{task}]")
    if len(part) < 2:
        return None
    found = re.search(rf"^(\w+): \[{TILL}\]", part[1], re.MULTILINE)
    return found.group(1) if found else None


@pytest.fixture
def kiosk(tmp_path: Path) -> Kiosk:
    return Kiosk(tmp_path)


#: a printer set by hand on the till, which the technician then put in its host_vars
PRINTER = {
    "paper_mm": 58,
    "on_sale": False,
    # Cyrillic, a quote, a backslash and a tab: written so that TOML reads them back
    "header": ["Өглөөний Цай ХХК", 'СБД 1-р хороо, "Тэнгис" \\ 2\tдавхар'],
}
DISPLAY = {"device": "vfd:/dev/ttyUSB0@9600", "protocol": "cd5220", "shop": "Цайны газар №3"}


@pytest.mark.slow
def test_a_printer_in_the_host_vars_survives_two_runs_and_the_second_changes_nothing(
    kiosk: Kiosk,
) -> None:
    printer = {"device": f"file:{kiosk.root / 'slips'}", **PRINTER}
    kiosk.config.write_text(
        'base_url = "https://pay.example.mn"\n\n[printer]\n'
        f'device = "file:{kiosk.root / "slips"}"\npaper_mm = 58\n'
    )
    kiosk.host_vars({"qrpos_printer": printer, "qrpos_customer_display": DISPLAY,
                     "qrpos_scanner": {"source": "picamera", "decoder": "zbar"},
                     "qrpos_language": "en"})  # fmt: skip

    first = kiosk.site()
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert task_result(first, CONFIG_TASK) == "changed"
    assert kiosk.restarts() == 1
    written = kiosk.config.read_bytes()

    second = kiosk.site()
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-2000:]
    assert task_result(second, CONFIG_TASK) == "ok"
    assert changed(second) == 0
    assert kiosk.restarts() == 1  # nothing new: the kiosk is not restarted
    assert kiosk.config.read_bytes() == written

    config = load_config(config_path=kiosk.config, env={})
    assert dict(config.printer) == printer
    assert dict(config.customer_display) == DISPLAY
    assert dict(config.scanner) == {"source": "picamera", "decoder": "zbar"}
    assert config.language == "en"
    assert config.base_url == "https://pay.example.mn"
    assert config.state_dir == kiosk.root / "state"


@pytest.mark.slow
def test_a_printer_set_by_hand_that_the_inventory_lacks_stops_the_till_untouched(
    kiosk: Kiosk,
) -> None:
    by_hand = (
        'base_url = "https://pay.example.mn"\nlanguage = "mn"\n\n'
        f'[printer]\ndevice = "file:{kiosk.root / "slips"}"\n\n'
        '[scanner]\nsource = "auto"\ndecoder = "zbar"\n'
    )
    kiosk.config.write_text(by_hand)
    kiosk.host_vars({"qrpos_customer_display": DISPLAY})

    refused = kiosk.site()
    assert refused.returncode != 0, refused.stdout[-3000:]
    assert kiosk.config.read_text() == by_hand
    assert task_result(refused, CONFIG_TASK) is None
    assert kiosk.restarts() == 0
    # each setting named, with its value and the variable that would carry it
    assert f'printer = {{\\"device\\": \\"file:{kiosk.root / "slips"}\\"}} (qrpos_printer)' in (
        refused.stdout
    )
    assert 'scanner.decoder = \\"zbar\\" (qrpos_scanner)' in refused.stdout
    assert "language" not in refused.stdout.split("would drop")[1]  # "mn" is kept as it is
    assert "-e qrpos_config_replace=true" in refused.stdout

    replaced = kiosk.site("-e", "qrpos_config_replace=true")
    assert replaced.returncode == 0, replaced.stdout[-3000:] + replaced.stderr[-2000:]
    config = load_config(config_path=kiosk.config, env={})
    assert dict(config.printer) == {}
    assert dict(config.scanner) == {"source": "auto"}
    assert dict(config.customer_display) == DISPLAY
    assert kiosk.restarts() == 1
