"""Root tools never follow a link the kiosk user planted in the state dir, and what they
create there belongs to the kiosk user (mode 0600).

Run as root (the suite's container is): the "kiosk user" is `nobody`, owner of a state
dir in which symlinks to a root-owned victim file are planted at every name the tools
write, the temporary names of the old code included.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import qrpos
from qrpos import manager_pin
from qrpos.config import PAIRING_FILE, write_pairing
from qrpos.doctor import Status, check_state_dir

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as root")

PRECIOUS = b"root's precious file\n"


class Planted:
    def __init__(self, base: Path) -> None:
        self.kiosk = pwd.getpwnam("nobody")
        self.state = base / "state"
        self.state.mkdir(mode=0o700)
        os.chown(self.state, self.kiosk.pw_uid, self.kiosk.pw_gid)
        self.victim = base / "victim"
        self.victim.write_bytes(PRECIOUS)
        self.victim.chmod(0o644)
        self.links: set[str] = set()

    def plant(self, *names: str) -> None:
        for name in names:
            (self.state / name).symlink_to(self.victim)
            os.lchown(self.state / name, self.kiosk.pw_uid, self.kiosk.pw_gid)
            self.links.add(name)

    def assert_safe(self) -> None:
        assert self.victim.read_bytes() == PRECIOUS
        victim = self.victim.stat()
        assert (victim.st_uid, stat.S_IMODE(victim.st_mode)) == (0, 0o644)
        for entry in self.state.iterdir():
            st = entry.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue  # a planted link we did not replace: left alone, not followed
            assert (st.st_uid, st.st_gid) == (self.kiosk.pw_uid, self.kiosk.pw_gid), entry
            assert stat.S_IMODE(st.st_mode) & 0o077 == 0, (entry, oct(st.st_mode))


@pytest.fixture
def planted() -> Iterator[Planted]:
    # not under pytest's 0700 tmp: `nobody` must be able to reach the state dir
    base = Path(tempfile.mkdtemp(prefix="qrpos-root-"))
    base.chmod(0o711)
    try:
        yield Planted(base)
    finally:
        shutil.rmtree(base)


WRITERS: dict[str, tuple[Callable[[Path], object], tuple[str, ...]]] = {
    "manager pin": (
        lambda d: manager_pin.set_pin(d, "4321"),
        ("manager-pin.tmp", manager_pin.PIN_FILE),
    ),
    "pairing": (lambda d: write_pairing(d, "term_abcdefgh"), ("terminal.tmp", PAIRING_FILE)),
    "doctor probe": (check_state_dir, (".doctor-write-test",)),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_root_writes_never_follow_a_planted_link(planted: Planted, writer: str) -> None:
    write, names = WRITERS[writer]
    planted.plant(*names)
    result = write(planted.state)
    planted.assert_safe()
    if writer == "doctor probe":
        assert result.status is Status.OK, result  # type: ignore[attr-defined]
    else:
        final = planted.state / names[-1]
        assert final.is_file() and not final.is_symlink()
        assert stat.S_IMODE(final.stat().st_mode) == 0o600


def test_the_written_files_still_work(planted: Planted) -> None:
    manager_pin.set_pin(planted.state, "4321")
    write_pairing(planted.state, "term_abcdefgh")
    assert manager_pin.verify_pin(planted.state, "4321")
    assert "term_abcdefgh" in (planted.state / PAIRING_FILE).read_text()


#: Once a process has become `nobody` it can read only what all can read. On a Pi qrpos
#: is in /opt/qrpos and Python in /usr; here the checkout may be a clone under /root
#: (0700) with its .venv in it, and the interpreter may be there too. So the subprocess
#: runs a copy of qrpos in a directory all can read (its catalogues and fonts are read
#: after the drop), and first runs the same command on a root-owned scratch dir (no
#: privileges dropped there) to import the modules it needs from the venv and the
#: standard library, then on the planted dir. A warm-up that did not run the command
#: (a usage error) would leave the second run to import after the drop: it must not.
WARM_THEN_RUN = """
import os, sys
import qrpos
from qrpos.cli import main
from qrpos.cli.usage import EXIT_USAGE
assert qrpos.__file__.startswith(os.environ["PYTHONPATH"] + os.sep), qrpos.__file__
scratch, state, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
os.environ["QRPOS_STATE_DIR"] = scratch
if main(argv) == EXIT_USAGE:
    raise RuntimeError("the warm-up did not run the command")
os.environ["QRPOS_STATE_DIR"] = state
sys.exit(main(argv))
"""


@pytest.fixture(scope="module")
def readable_qrpos() -> Iterator[Path]:
    """A copy of this checkout's qrpos package in a directory every user can read."""
    base = Path(tempfile.mkdtemp(prefix="qrpos-code-"))
    base.chmod(0o755)
    try:
        shutil.copytree(
            Path(qrpos.__file__).parent,
            base / "qrpos",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield base
    finally:
        shutil.rmtree(base)


def _qrpos(planted: Planted, code: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QRPOS_")}
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=str(code),
        QRPOS_CONFIG=os.devnull,
    )
    scratch = planted.state.parent / "scratch"
    return subprocess.run(
        [sys.executable, "-c", WARM_THEN_RUN, str(scratch), str(planted.state), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )


def test_outbox_list_as_root_leaves_a_database_the_kiosk_owns(
    planted: Planted, readable_qrpos: Path
) -> None:
    done = _qrpos(planted, readable_qrpos, "outbox", "list")
    assert done.returncode == 0, done.stderr
    db = planted.state / "outbox.sqlite3"
    assert db.is_file()
    planted.assert_safe()


@pytest.mark.parametrize("command", [["outbox", "list"], ["doctor", "--no-camera"]])
def test_root_tools_do_not_follow_links_planted_at_the_databases_names(
    planted: Planted, readable_qrpos: Path, command: list[str]
) -> None:
    planted.plant("outbox.sqlite3-wal", "outbox.sqlite3-shm", "outbox.sqlite3-journal")
    planted.plant(".doctor-write-test")
    done = _qrpos(planted, readable_qrpos, *command)
    assert "Traceback" not in done.stderr, done.stderr
    planted.assert_safe()


ROUND_TRIP = """
import os, sys
from pathlib import Path
from qrpos.statedir import acting_as_state_owner, as_root
state = Path(sys.argv[1])
owner = state.stat()
with acting_as_state_owner(state) as acting:
    assert acting and os.geteuid() == owner.st_uid and os.getegid() == owner.st_gid
    (state / "made-as-owner").write_text("x")
    with as_root():
        assert os.geteuid() == 0  # what decrypting the credential store needs
    assert os.geteuid() == owner.st_uid
assert (os.geteuid(), os.getegid()) == (0, 0)
print("ok")
"""


def test_root_tools_act_as_the_owner_and_take_root_back_only_when_asked(
    planted: Planted,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", ROUND_TRIP, str(planted.state)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.stdout.strip() == "ok", done.stderr
    made = (planted.state / "made-as-owner").stat()
    assert (made.st_uid, made.st_gid) == (planted.kiosk.pw_uid, planted.kiosk.pw_gid)
    assert stat.S_IMODE(made.st_mode) == 0o600  # the owner's umask while acting
