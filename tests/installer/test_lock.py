"""One hashed, pinned set everywhere: dev (dev.sh), CI (.ci/run runs dev.sh), the Pi
(install.sh) and the fleet (site.yml) install only from the locks, with --require-hashes.

Whether the hashes cover both the x86_64 and the aarch64 wheels is checked against PyPI
by the README's command (`pip download --require-hashes ... --platform`); here, without
a network, the locks' shape and their agreement with pyproject.toml are.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
LOCK = DEPLOY / "requirements.lock"
DEV_LOCK = DEPLOY / "requirements-dev.lock"
REQUIREMENT = re.compile(r"^([A-Za-z0-9._-]+)==([^ ;\\]+)")


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lock: Path) -> dict[str, str]:
    """name -> version of every requirement; asserts each is pinned and hashed."""
    pins: dict[str, str] = {}
    entries = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text())
    for entry in entries:
        if entry.startswith("#") or not entry.strip():
            continue
        match = REQUIREMENT.match(entry)
        assert match, f"{lock.name}: not pinned with ==: {entry.splitlines()[0]}"
        assert "--hash=sha256:" in entry, f"{lock.name}: {match[1]} has no hash"
        pins[_canon(match[1])] = match[2]
    return pins


def _declared(*extras: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in extras:
        specs += project["optional-dependencies"][extra]
    return {_canon(re.split(r"[<>=!~;\[ ]", s, maxsplit=1)[0]) for s in specs}


def test_every_locked_requirement_is_pinned_and_hashed() -> None:
    assert _pins(LOCK) and _pins(DEV_LOCK)


def test_the_locks_cover_what_pyproject_declares() -> None:
    assert _declared() <= set(_pins(LOCK)), _declared() - set(_pins(LOCK))
    assert _declared("dev") <= set(_pins(DEV_LOCK)), _declared("dev") - set(_pins(DEV_LOCK))
    # the build backend is locked too: building qrpos fetches nothing unhashed
    assert {"setuptools", "wheel"} <= set(_pins(LOCK))


def test_dev_and_the_kiosk_share_every_version() -> None:
    kiosk, dev = _pins(LOCK), _pins(DEV_LOCK)
    assert {n: v for n, v in kiosk.items() if dev.get(n) != v} == {}


def test_the_locks_follow_the_chosen_pins() -> None:
    chosen = dict(
        (_canon(name), version)
        for name, version in (
            line.split("==")
            for line in (DEPLOY / "constraints.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")
        )
    )
    dev = _pins(DEV_LOCK)
    stale = {n: (v, dev[n]) for n, v in chosen.items() if n in dev and dev[n] != v}
    assert stale == {}, "run bash deploy/lock.sh"


def _pip_lines(text: str) -> list[str]:
    joined = text.replace("\\\n", " ")
    return [ln for ln in joined.splitlines() if "pip install" in ln or "pip:" in ln]


@pytest.mark.parametrize("script", ["dev.sh", "install.sh"])
def test_scripts_install_only_the_hashed_lock_or_nothing_from_an_index(script: str) -> None:
    lines = _pip_lines((DEPLOY / script).read_text())
    assert any("--require-hashes -r" in ln and "LOCK" in ln.upper() for ln in lines), lines
    for line in lines:
        assert "--require-hashes" in line or "--no-index" in line, line


def test_the_fleet_installs_only_the_hashed_lock() -> None:
    play = (DEPLOY / "ansible" / "site.yml").read_text()
    tasks = play.split("ansible.builtin.pip:")[1:]
    assert len(tasks) == 2
    assert "requirements.lock" in tasks[0] and '"--require-hashes"' in tasks[0]
    assert "--no-deps --no-build-isolation --no-index" in tasks[1]
    assert "constraints-system" not in play


def test_the_dry_run_shows_the_hashed_install() -> None:
    plan = subprocess.run(
        ["bash", str(DEPLOY / "install.sh"), "--dry-run"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"pip install --quiet --require-hashes -r {LOCK}" in plan
    assert f"--no-deps --no-build-isolation --no-index {ROOT}" in plan
