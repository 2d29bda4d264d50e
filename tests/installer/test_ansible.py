"""deploy/ansible/site.yml: valid YAML, builtin modules only, secrets never logged.

YAML is parsed by the system's python3-yaml when present (qrpos itself does not depend
on PyYAML); `ansible-playbook --syntax-check` runs (ansible-core is a dev dependency).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

#: ansible-core is a dev dependency: its playbook runner sits beside this Python
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "deploy" / "ansible" / "site.yml"
INVENTORY = ROOT / "deploy" / "ansible" / "inventory.example.ini"
TASK_KEYS = {"name", "loop", "register", "notify", "tags", "when", "no_log", "changed_when",
             "delegate_to", "become", "run_once", "failed_when", "environment",
             "check_mode"}  # fmt: skip


@pytest.fixture(scope="module")
def plays() -> list[dict[str, Any]]:
    for python in ("/usr/bin/python3", shutil.which("python3")):
        if not python:
            continue
        result = subprocess.run(
            [python, "-c", "import json, sys, yaml; "
             "print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", str(PLAYBOOK)],
            capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode == 0:
            return list(json.loads(result.stdout))
        if "No module named 'yaml'" not in result.stderr:
            pytest.fail(f"site.yml is not valid YAML: {result.stderr}")
    pytest.skip("no python3 with PyYAML on this machine")


def _module(task: dict[str, Any]) -> str:
    (module,) = [k for k in task if k not in TASK_KEYS]
    return module


def test_every_task_uses_a_builtin_module(plays: list[dict[str, Any]]) -> None:
    (play,) = plays
    assert play["hosts"] == "kiosks"
    modules = {_module(t) for t in play["tasks"] + play["handlers"]}
    assert all(m.startswith("ansible.builtin.") for m in modules), modules


def test_password_only_reaches_stdin_of_pair_and_systemd_creds(
    plays: list[dict[str, Any]],
) -> None:
    (play,) = plays
    secret_tasks = [t for t in play["tasks"] if "qrpos_password" in json.dumps(t)]
    assert len(secret_tasks) == 2
    for task in secret_tasks:
        assert task["no_log"] is True
        assert "qrpos_password" in task["ansible.builtin.command"]["stdin"]
        assert "qrpos_password" not in json.dumps(task["ansible.builtin.command"]["argv"])
    argv = secret_tasks[1]["ansible.builtin.command"]["argv"]
    assert argv[:3] == ["systemd-creds", "encrypt", "--name=qrpos-password"]


@pytest.mark.parametrize("playbook", ["site.yml", "update.yml", "report.yml"])
def test_ansible_syntax_check(playbook: str) -> None:
    result = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(INVENTORY), "--syntax-check",
         str(PLAYBOOK.with_name(playbook))],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def _tasks(playbook: str) -> list[dict[str, Any]]:
    (play,) = yaml.safe_load((PLAYBOOK.with_name(playbook)).read_text())
    return list(play["tasks"])


@pytest.mark.parametrize("playbook", ["site.yml", "update.yml"])
def test_the_fleet_builds_a_release_beside_the_current_one(playbook: str) -> None:
    """As install.sh: a venv of its own under releases/, then release.sh's switch and
    health gate; never pip into the venv the kiosk runs from (issue 40)."""
    tasks = _tasks(playbook)
    pips = [t["ansible.builtin.pip"] for t in tasks if "ansible.builtin.pip" in t]
    assert [p["virtualenv"] for p in pips] == ["{{ qrpos_release }}"] * 2
    assert pips[0]["virtualenv_site_packages"] is True  # picamera2 from apt
    commands = [t["ansible.builtin.command"] for t in tasks if "ansible.builtin.command" in t]
    argvs = [c["argv"] for c in commands if isinstance(c, dict) and "argv" in c]
    activate = [a for a in argvs if "activate" in a]
    assert activate == [
        ["bash", "{{ qrpos_release_src }}/deploy/release.sh", "activate", "{{ qrpos_release }}"]
    ]
    # the release is built before the switch
    switch = next(i for i, t in enumerate(tasks) if "release.sh" in json.dumps(t))
    assert max(i for i, t in enumerate(tasks) if "ansible.builtin.pip" in t) < switch


@pytest.mark.parametrize("playbook", ["site.yml", "update.yml"])
def test_the_fleet_checks_the_numpy_the_lock_holds_for_the_kiosks_python(playbook: str) -> None:
    """The lock forks numpy by Python (Bookworm 3.11, Trixie 3.13): the play asks
    deploy/locked_version.py on the kiosk, as install.sh does, and stops on a mismatch
    before any pip task."""
    tasks = _tasks(playbook)
    text = [json.dumps(t) for t in tasks]
    ask = next(i for i, t in enumerate(text) if "deploy/locked_version.py" in t)
    check = next(i for i, t in enumerate(text) if "ansible.builtin.assert" in t and "numpy" in t)
    first_pip = next(i for i, t in enumerate(tasks) if "ansible.builtin.pip" in t)
    assert ask < check < first_pip
    assert tasks[check]["ansible.builtin.assert"]["that"] == (
        "qrpos_numpy.stdout == qrpos_locked_numpy.stdout"
    )


def test_site_checks_a_tills_config_before_it_changes_anything_on_it() -> None:
    """A setting set by hand in a till's config.toml that the inventory does not carry
    stops that till's run (issue 49) before anything on it changes; the file is then
    written from the inventory by a template, and both are in `--tags config`
    (tests/installer/test_site_host_vars.py runs them)."""
    tasks = _tasks("site.yml")
    first, second = tasks[0], tasks[1]
    assert first["ansible.builtin.command"]["argv"][-1] == "{{ qrpos_config }}"
    assert first["changed_when"] is False
    assert "qrpos_config_lost.stdout_lines" in second["ansible.builtin.assert"]["that"]
    (config,) = [t for t in tasks if "ansible.builtin.template" in t]
    assert config["ansible.builtin.template"]["dest"] == "{{ qrpos_config }}"
    assert [t["name"] for t in tasks if "config" in t.get("tags", [])] == [
        first["name"],
        second["name"],
        config["name"],
    ]
    assert not any("/etc/qrpos/config.toml" in json.dumps(t) for t in tasks)
