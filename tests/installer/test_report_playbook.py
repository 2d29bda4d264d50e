"""deploy/ansible/report.yml (every till's end-of-day merged on the controller) and the
node_exporter part of site.yml: valid YAML, builtin modules only, the till's report made
by `qrpos report --json` with the kiosk's own credential, merged by `qrpos report
--merge`; `ansible-playbook --syntax-check` when Ansible is on PATH."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

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
    assert argv[argv.index("report") :][-3:] == ["--date", "{{ report_date }}", "--json"]
    assert any("LoadCredentialEncrypted=qrpos-password" in a for a in argv)
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


@pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="Ansible not installed")
@pytest.mark.parametrize("playbook", [REPORT, SITE], ids=["report", "site"])
def test_ansible_syntax_check(playbook: Path) -> None:
    result = subprocess.run(
        ["ansible-playbook", "-i", str(INVENTORY), "--syntax-check", str(playbook)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
