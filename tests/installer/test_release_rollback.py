"""Releases side by side, a health gate after the switch, and automatic rollback
(`deploy/release.sh`), with an outbox holding an unsettled sale throughout.

Each release here is a real build of the kiosk: a venv of its own, made by `python -m
venv`, holding its own copy of qrpos's source (the dependencies come from this checkout's
venv through a `.pth`, as pip would have put them in). A broken build is one whose
dependencies are missing: its `qrpos` starts but cannot open the outbox. The seam mocked
is `SYSTEMCTL`, the script's own variable: a stand-in that starts the "unit" by running
the current release's `qrpos --version`, as systemd would start `qrpos run`.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from headless import cli_environment
from qrpos.simulator import Sandbox, TerminalCredentials

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "deploy" / "release.sh"

FAKE_SYSTEMCTL = """#!/usr/bin/env bash
# systemctl for one unit: its state in files beside this script
here=$(dirname "$0")
case "$1" in
    is-active) [ "$(cat "$here/state")" = active ] ;;
    is-enabled) exit 1 ;;
    restart)
        n=$(cat "$here/restarts"); echo $((n + 1)) > "$here/restarts"
        # the unit starts the current release; a build that crashes at start fails it
        if "$QRPOS_PREFIX/venv/bin/qrpos" --version >/dev/null 2>&1 &&
            [ ! -e "$QRPOS_PREFIX/venv/CRASHES" ]; then
            echo active > "$here/state"
        else
            echo failed > "$here/state"
        fi
        ;;
    show)
        case "$2" in
            --property=ActiveState) cat "$here/state" ;;
            --property=NRestarts) echo 0 ;;
        esac
        ;;
esac
"""


def build_release(
    prefix: Path, name: str, *, with_dependencies: bool = True, schema_bump: bool = False
) -> Path:
    """A release of the kiosk in `prefix/releases/name`: venv, source, console script."""
    release = prefix / "releases" / name
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(release)],
        check=True,
        capture_output=True,
    )
    source = release / "src"
    shutil.copytree(
        ROOT / "src" / "qrpos", source / "qrpos", ignore=shutil.ignore_patterns("__pycache__")
    )
    if schema_bump:  # a newer build whose outbox schema is one step ahead
        store = source / "qrpos" / "ledger" / "migrations.py"
        text = store.read_text()
        bumped = text.replace(
            ")\n\nSCHEMA_VERSION",
            '    """\n    ALTER TABLE charge_intent ADD COLUMN newer_note TEXT;\n    """,\n'
            ")\n\nSCHEMA_VERSION",
            1,
        )
        assert bumped != text
        store.write_text(bumped)
    [site_packages] = (release / "lib").glob("python3*/site-packages")
    paths = [str(source)]
    if with_dependencies:
        paths += [p for p in site.getsitepackages() if "site-packages" in p]
    (site_packages / "qrpos-release.pth").write_text("\n".join(paths) + "\n")
    script = release / "bin" / "qrpos"
    script.write_text(
        f"#!{release}/bin/python\nimport sys\nfrom qrpos.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return release


@pytest.fixture
def world(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> dict[str, str]:
    """The kiosk's environment, a prefix for its releases, and a stand-in systemctl."""
    env = cli_environment(tmp_path, live_url, terminal)
    Path(env["QRPOS_STATE_DIR"]).mkdir(mode=0o700)  # install.sh makes it before the switch
    prefix = tmp_path / "opt"
    prefix.mkdir()
    unit = tmp_path / "unit"
    unit.mkdir()
    (unit / "state").write_text("inactive\n")
    (unit / "restarts").write_text("0\n")
    systemctl = unit / "systemctl"
    systemctl.write_text(FAKE_SYSTEMCTL)
    systemctl.chmod(0o755)
    env.update(
        QRPOS_PREFIX=str(prefix),
        SYSTEMCTL=str(systemctl),
        QRPOS_GATE_S="5",
        QRPOS_STEADY_S="1",
        PATH=os.environ["PATH"],
    )
    return env


def release_sh(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(RELEASE), *args], env=env, capture_output=True, text=True, timeout=300
    )


def current(env: dict[str, str]) -> str:
    return Path(env["QRPOS_PREFIX"], "venv").resolve().name


def as_release(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`qrpos ARGS` run by the current release, as the unit and the PATH link run it."""
    return subprocess.run(
        [str(Path(env["QRPOS_PREFIX"], "venv", "bin", "qrpos")), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def unsettled_sale(env: dict[str, str], sandbox: Sandbox) -> str:
    """A sale whose reply was lost and whose charge did commit: kept, unsettled."""
    wallet = sandbox.create_wallet(50_000)
    sandbox.arm_fault("drop_after_commit", operation="charge")
    sandbox.arm_fault("error_before_commit", count=50, operation="charge")
    sandbox.arm_fault("error_before_commit", count=50, operation="list")
    kept = as_release(
        env, "charge", "--amount", "4500", "--token", wallet.qr_token, "--deadline", "2"
    )
    assert kept.returncode == 3, kept.stderr  # unresolved, kept in the outbox
    return wallet.wallet_id


def resolves_charged(env: dict[str, str], sandbox: Sandbox, wallet_id: str) -> None:
    sandbox.clear_faults()
    done = as_release(env, "outbox", "resolve", "--deadline", "30")
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = [tx for tx in sandbox.transactions() if tx.wallet_id == wallet_id]
    listed = as_release(env, "outbox", "list", "--all")
    assert row.id in listed.stdout, listed.stdout  # charged, on its own row: no second
    assert len([tx for tx in sandbox.transactions() if tx.wallet_id == wallet_id]) == 1


def test_a_broken_build_is_rolled_back_and_the_unsettled_sale_resolves(
    world: dict[str, str], sandbox: Sandbox
) -> None:
    prefix = Path(world["QRPOS_PREFIX"])
    first = build_release(prefix, "1-first")
    done = release_sh(world, "activate", str(first))
    assert done.returncode == 0, done.stdout + done.stderr
    assert current(world) == "1-first"
    wallet_id = unsettled_sale(world, sandbox)
    # the kiosk runs the first release
    (prefix.parent / "unit" / "state").write_text("active\n")

    broken = build_release(prefix, "2-broken", with_dependencies=False)
    done = release_sh(world, "activate", str(broken))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "health gate failed: rolling back" in done.stderr
    assert current(world) == "1-first"
    assert (prefix / "previous").resolve().name == "2-broken"
    assert (prefix.parent / "unit" / "state").read_text().strip() == "active"  # restarted
    resolves_charged(world, sandbox, wallet_id)

    fixed = build_release(prefix, "3-fixed")
    done = release_sh(world, "activate", str(fixed))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "health gate passed" in done.stdout
    assert current(world) == "3-fixed"
    assert (prefix / "previous").resolve().name == "1-first"


def test_a_kiosk_that_crashes_at_start_fails_the_gate(
    world: dict[str, str], sandbox: Sandbox
) -> None:
    prefix = Path(world["QRPOS_PREFIX"])
    assert release_sh(world, "activate", str(build_release(prefix, "1-first"))).returncode == 0
    wallet_id = unsettled_sale(world, sandbox)
    (prefix.parent / "unit" / "state").write_text("active\n")
    crashing = build_release(prefix, "2-crashes")
    (crashing / "CRASHES").touch()
    done = release_sh(world, "activate", str(crashing))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "did not become active" in done.stdout
    assert current(world) == "1-first"
    resolves_charged(world, sandbox, wallet_id)


def test_a_rollback_below_a_migrated_outbox_refuses_it_visibly_and_keeps_the_sale(
    world: dict[str, str], sandbox: Sandbox
) -> None:
    """The newer build migrated the outbox before its unit failed: the release rolled back
    to refuses the file (migrations only go forward) and says so; nothing is lost, and a
    repaired build of the newer schema settles the sale."""
    prefix = Path(world["QRPOS_PREFIX"])
    assert release_sh(world, "activate", str(build_release(prefix, "1-first"))).returncode == 0
    wallet_id = unsettled_sale(world, sandbox)
    (prefix.parent / "unit" / "state").write_text("active\n")
    newer = build_release(prefix, "2-newer", schema_bump=True)
    # the newer build opens the outbox (and migrates it) before its unit fails; opened here
    # so that the premise does not hang on the gate's doctor finishing under load (it
    # failed before migrating on a loaded machine: exit 1, the outbox never migrated)
    migrated = subprocess.run(
        [str(newer / "bin" / "qrpos"), "outbox", "list"],
        env=world, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    (newer / "CRASHES").touch()
    done = release_sh(world, "activate", str(newer))
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.search(r"cannot use the outbox: .*newer qrpos", done.stderr), done.stderr
    assert "every sale in it is kept" in done.stderr
    assert current(world) == "1-first"
    assert as_release(world, "outbox", "list").returncode == 1  # refused, visibly
    repaired = build_release(prefix, "3-repaired", schema_bump=True)
    assert release_sh(world, "activate", str(repaired)).returncode == 0
    resolves_charged(world, sandbox, wallet_id)


def test_a_venv_from_before_releases_becomes_the_first_release(
    world: dict[str, str],
) -> None:
    prefix = Path(world["QRPOS_PREFIX"])
    legacy = build_release(prefix, "made-in-place")
    (prefix / "releases" / "made-in-place").rename(prefix / "venv")
    shutil.rmtree(prefix / "releases")
    assert not legacy.exists() and (prefix / "venv").is_dir()
    new = build_release(prefix, "2-new")
    done = release_sh(world, "activate", str(new))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (prefix / "venv").is_symlink() and current(world) == "2-new"
    assert (prefix / "previous").resolve().name.startswith("legacy-")


def test_old_releases_are_pruned_but_current_and_previous_kept(world: dict[str, str]) -> None:
    prefix = Path(world["QRPOS_PREFIX"])
    env = {**world, "QRPOS_KEEP": "2"}
    for n in range(1, 5):
        release = build_release(prefix, f"{n}-r")
        os.utime(release, (1_000_000 + n, 1_000_000 + n))
        assert release_sh(env, "activate", str(release)).returncode == 0
    kept = sorted(p.name for p in (prefix / "releases").iterdir())
    assert kept == ["3-r", "4-r"]
    assert current(env) == "4-r" and (prefix / "previous").resolve().name == "3-r"
    done = release_sh(env, "rollback")
    assert done.returncode == 0, done.stderr
    assert current(env) == "3-r"


ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
UPDATE = ROOT / "deploy" / "ansible" / "update.yml"


def test_the_fleet_update_stops_after_the_wave_in_which_a_kiosk_rolled_back(
    world: dict[str, str], tmp_path: Path
) -> None:
    """deploy/ansible/update.yml run for real by ansible-playbook, three kiosks on this
    machine (each its own prefix): the first wave's kiosk gets a broken build, rolls back
    by itself, and the play stops; the later waves are never switched. (The build tasks
    are skipped: `--start-at-task` begins at the switch, the builds made as above.)"""
    hosts = {}
    for n, broken in ((1, True), (2, False), (3, False)):
        prefix = tmp_path / f"kiosk{n}"
        first = build_release(prefix, "1-first")
        assert (
            release_sh({**world, "QRPOS_PREFIX": str(prefix)}, "activate", str(first)).returncode
            == 0
        )
        release = build_release(prefix, "2-next", with_dependencies=not broken)
        (prefix / "src" / "2-next" / "deploy").mkdir(parents=True)
        shutil.copy(RELEASE, prefix / "src" / "2-next" / "deploy" / "release.sh")
        hosts[f"kiosk{n}"] = (prefix, release)
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(
        "[kiosks]\n"
        + "".join(
            f"{name} ansible_connection=local ansible_python_interpreter={sys.executable}"
            f" qrpos_prefix={prefix} qrpos_release_id=2-next\n"
            for name, (prefix, _) in hosts.items()
        )
    )
    done = subprocess.run(
        [
            ANSIBLE_PLAYBOOK,
            "-i",
            str(inventory),
            str(UPDATE),
            "--start-at-task",
            "Switch, health gate, automatic rollback (deploy/release.sh)",
            "-e",
            "ansible_become=false",
            "-e",
            '{"qrpos_waves": ["1", "1", "100%"]}',
        ],
        env={**world, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_HOME": str(tmp_path / "ansible")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0, done.stdout
    assert "health gate failed: rolling back" in done.stdout, done.stdout
    for name, (prefix, _) in hosts.items():
        now = (prefix / "venv").resolve().name
        assert now == "1-first", (name, now, done.stdout)  # kiosk1 rolled back, 2-3 untouched
    assert "kiosk2" not in done.stdout.split("PLAY RECAP")[0].split("TASK [Switch")[-1]
