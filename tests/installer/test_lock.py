"""One hashed, pinned set everywhere: dev (dev.sh), CI (.ci/run runs dev.sh), the Pi
(install.sh) and the fleet (site.yml) install only from the locks, with --require-hashes.

The locks are universal and fork by Python (docs/releases.md): 3.11 is Debian 12 /
Bookworm with python3-numpy 1.24.2, 3.13 is Debian 13 / Trixie with python3-numpy 2.2.4;
numpy and OpenCV (4.8 does not import under numpy 2) have an entry for each.

Whether the hashes cover both the x86_64 and the aarch64 wheels of both Pythons is checked
against PyPI by docs/releases.md's command (`pip install --dry-run --platform ...`); here,
without a network, the locks' shape, their forks and their agreement with pyproject.toml.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
LOCK = DEPLOY / "requirements.lock"
DEV_LOCK = DEPLOY / "requirements-dev.lock"
REQUIREMENT = re.compile(r"^([A-Za-z0-9._-]+)==([^ ;\\]+)\s*(?:;\s*([^\\]*?))?\s*\\?$")
BOOKWORM = (3, 11, 2)  # Debian 12's python3
TRIXIE = (3, 13, 5)  # Debian 13's python3

# deploy/locked_version.py: what install.sh and site.yml run with the system's python3
# (no qrpos installed yet), loaded here by its path
_spec = importlib.util.spec_from_file_location("locked_version", DEPLOY / "locked_version.py")
assert _spec and _spec.loader
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
locked_version: Callable[[str, str, tuple[int, ...]], str | None] = _module.locked_version


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _entries(lock: Path) -> dict[tuple[str, str], str]:
    """(name, marker) -> version of every requirement; asserts each is pinned and hashed."""
    pins: dict[tuple[str, str], str] = {}
    entries = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text())
    for entry in entries:
        if entry.startswith("#") or not entry.strip():
            continue
        match = REQUIREMENT.match(entry.splitlines()[0])
        assert match, f"{lock.name}: not pinned with ==: {entry.splitlines()[0]}"
        assert "--hash=sha256:" in entry, f"{lock.name}: {match[1]} has no hash"
        pins[(_canon(match[1]), match[3] or "")] = match[2]
    return pins


def _pins(lock: Path) -> dict[str, str]:
    """name -> version, for the packages one version serves both Pythons."""
    return {name: v for (name, marker), v in _entries(lock).items() if "python" not in marker}


def _names(lock: Path) -> set[str]:
    return {name for name, _ in _entries(lock)}


def _versions(lock: Path) -> dict[str, set[str]]:
    versions: dict[str, set[str]] = {}
    for (name, _), version in _entries(lock).items():
        versions.setdefault(name, set()).add(version)
    return versions


def _forked_by_python(lock: Path) -> set[str]:
    return {name for name, vs in _versions(lock).items() if len(vs) > 1}


def _declared(*extras: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in extras:
        specs += project["optional-dependencies"][extra]
    return {_canon(re.split(r"[<>=!~;\[ ]", s, maxsplit=1)[0]) for s in specs}


def test_every_locked_requirement_is_pinned_and_hashed() -> None:
    assert _pins(LOCK) and _pins(DEV_LOCK)


def test_the_locks_cover_what_pyproject_declares() -> None:
    assert _declared() <= _names(LOCK), _declared() - _names(LOCK)
    assert _declared("dev") <= _names(DEV_LOCK), _declared("dev") - _names(DEV_LOCK)
    # the build backend is locked too: building qrpos fetches nothing unhashed
    assert {"setuptools", "wheel"} <= set(_pins(LOCK))


def test_dev_and_the_kiosk_share_every_version() -> None:
    # (their markers may differ: the dev set pulls cffi in on every platform, say)
    kiosk, dev = _versions(LOCK), _versions(DEV_LOCK)
    assert {n: v for n, v in kiosk.items() if dev.get(n) != v} == {}


@pytest.mark.parametrize("lock", [LOCK, DEV_LOCK], ids=lambda path: path.name)
def test_numpy_follows_each_release_and_opencv_follows_numpy(lock: Path) -> None:
    text = lock.read_text()
    # each release's python3-numpy (apt-cache policy python3-numpy in its root): the
    # venv sees system site packages and must not shadow what picamera2 was built with
    assert locked_version("numpy", text, BOOKWORM) == "1.24.2"
    assert locked_version("numpy", text, TRIXIE) == "2.2.4"
    # Bookworm's set unchanged; Trixie's OpenCV is one built for numpy 2 (4.10 or later)
    assert locked_version("opencv-python-headless", text, BOOKWORM) == "4.8.1.78"
    trixie_cv = locked_version("opencv-python-headless", text, TRIXIE)
    assert trixie_cv is not None
    assert tuple(int(x) for x in trixie_cv.split(".")[:2]) >= (4, 10)
    # in the kiosk's set only numpy and OpenCV fork: every other package the Pi runs is
    # one version for both releases (the dev set adds ansible-core, whose newer releases
    # need Python 3.12: pure Python, tests only)
    assert _forked_by_python(LOCK) == {"numpy", "opencv-python-headless"}
    assert _forked_by_python(DEV_LOCK) <= {"numpy", "opencv-python-headless", "ansible-core"}


def test_a_python_neither_release_has_is_not_given_a_guess() -> None:
    text = (
        "numpy==1.24.2 ; python_full_version < '3.13' \\\n"
        "numpy==2.2.4 ; python_full_version >= '3.13' \\\n"
    )
    assert locked_version("numpy", text, (3, 12, 3)) == "1.24.2"  # what pip would take too
    assert locked_version("numpy", text, (3, 14, 0)) == "2.2.4"
    assert locked_version("scipy", text, TRIXIE) is None
    with pytest.raises(ValueError, match="does not read"):
        locked_version("numpy", "numpy==2.2.4 ; sys_platform == 'linux' \\\n", TRIXIE)


def test_the_locks_follow_the_chosen_pins() -> None:
    chosen: dict[tuple[str, str], str] = {}
    for line in (DEPLOY / "constraints.txt").read_text().splitlines():
        if "==" not in line or line.startswith("#"):
            continue
        requirement, _, marker = line.partition(";")
        name, version = requirement.split("==")
        # uv writes python_version < "3.13" as python_full_version < '3.13'
        marker = marker.strip().replace("python_version", "python_full_version")
        chosen[(_canon(name), marker.replace('"', "'"))] = version.strip()
    dev = _entries(DEV_LOCK)
    stale = {k: (v, dev[k]) for k, v in chosen.items() if k in dev and dev[k] != v}
    assert stale == {}, "run bash deploy/lock.sh"
    # every marker in the constraints reached the lock (a fork that uv merged away would not)
    forks = {k for k in chosen if k[1]}
    assert forks and forks <= set(dev), forks - set(dev)


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
