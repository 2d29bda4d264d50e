"""deploy/ansible/report.yml (every till's end-of-day merged on the controller) and the
node_exporter part of site.yml: valid YAML, builtin modules only, the till's report made
by `qrpos report --json` with the kiosk's own credential, merged by `qrpos report
--merge`; `ansible-playbook --syntax-check` (ansible-core is a dev dependency)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from qrpos.simulator import Sandbox

#: ansible-core is a dev dependency: its playbook runner sits beside this Python
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "deploy" / "ansible" / "report.yml"
SITE = ROOT / "deploy" / "ansible" / "site.yml"
INVENTORY = ROOT / "deploy" / "ansible" / "inventory.example.ini"
TASK_KEYS = {"name", "loop", "register", "notify", "tags", "when", "no_log", "changed_when",
             "delegate_to", "become", "run_once"}  # fmt: skip


def module(task: dict[str, Any]) -> str:
    (name,) = [k for k in task if k not in TASK_KEYS]
    return name


def test_report_playbook_gathers_each_till_and_merges_on_the_controller() -> None:
    tills, controller = yaml.safe_load(REPORT.read_text())
    assert tills["hosts"] == "kiosks" and controller["hosts"] == "localhost"
    tasks = tills["tasks"] + controller["tasks"]
    assert all(module(t).startswith("ansible.builtin.") for t in tasks)
    argv = tills["tasks"][0]["ansible.builtin.command"]["argv"]
    assert "'report'" in argv and "'--json'" in argv and "qrpos_run_as_kiosk" in argv
    wrapper = tills["vars"]["qrpos_run_as_kiosk"]
    assert any("LoadCredentialEncrypted=qrpos-password" in a for a in wrapper)
    fetch = tills["tasks"][2]
    assert fetch["delegate_to"] == "localhost" and "till_report.stdout" in json.dumps(fetch)
    merge = controller["tasks"][0]["ansible.builtin.command"]["argv"]
    assert "'--merge'" in merge and "--csv" in merge


def test_site_installs_node_exporter_with_the_kiosks_textfile_directory() -> None:
    (play,) = yaml.safe_load(SITE.read_text())
    text = json.dumps(play["tasks"])
    assert "prometheus-node-exporter" in text
    assert "--collector.textfile.directory=/var/lib/node_exporter/textfile_collector" in text
    unit = (ROOT / "systemd" / "qrpos.service").read_text()
    assert "ReadWritePaths=-/var/lib/node_exporter/textfile_collector" in unit


@pytest.mark.parametrize("playbook", [REPORT, SITE], ids=["report", "site"])
def test_ansible_syntax_check(playbook: Path) -> None:
    result = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(INVENTORY), "--syntax-check", str(playbook)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_report_playbook_merges_three_tills_end_to_end(
    live_url: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    """Three tills as local hosts, each running the real `qrpos report --json` against the
    sandbox with its own terminal; the controller play merges them (table, JSON, CSV)."""
    qrpos = str(Path(sys.executable).with_name("qrpos"))
    hosts: dict[str, Any] = {}
    for name, amounts in {"till-a": [1_000], "till-b": [2_000, 3_000], "till-c": [400]}.items():
        till = sandbox.create_terminal("m_shop")
        for minute, amount in enumerate(amounts):
            sandbox.seed_charge(till.username, amount, datetime(2024, 5, 2, 4, minute, tzinfo=UTC))
        home = tmp_path / name
        (home / "creds").mkdir(parents=True)
        (home / "creds" / "qrpos-password").write_text(till.password)
        config = home / "config.toml"
        config.write_text(
            f'base_url = "{live_url}"\nusername = "{till.username}"\n'
            f'state_dir = "{home / "state"}"\nlanguage = "en"\n'
        )
        hosts[name] = {
            "qrpos_config": str(config),
            "qrpos_report_env": {"CREDENTIALS_DIRECTORY": str(home / "creds"), "HOME": str(home)},
        }
    common = {"ansible_connection": "local", "ansible_become": False,
              "ansible_python_interpreter": sys.executable}  # fmt: skip
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        json.dumps(
            {
                "kiosks": {
                    "hosts": hosts,
                    "vars": common,
                },
                "ungrouped": {"hosts": {"localhost": common}},
            }
        )
    )
    out = tmp_path / "out"
    extra = {"report_date": "2024-05-02", "report_dir": str(out), "qrpos_controller": qrpos,
             "qrpos_run_as_kiosk": [], "qrpos_bin": qrpos}  # fmt: skip
    run = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(inventory), str(REPORT), "-e", json.dumps(extra)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "ANSIBLE_LOCALHOST_WARNING": "false"},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    merged = json.loads((out / "shop.json").read_text())
    assert merged["date"] == "2024-05-02"
    assert merged["charges"] == {"count": 4, "grossMNT": 6_400}
    assert len(merged["tills"]) == 3
    rows = list(csv.DictReader((out / "shop.csv").open()))
    assert rows[-1]["till"] == "total" and rows[-1]["grossMNT"] == "6400"
    assert "6,400" in (out / "shop.txt").read_text()
