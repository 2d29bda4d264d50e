"""Files in the state dir, written safely even when a root tool writes them.

The state dir belongs to the kiosk's user, so whatever is in it may have been planted by
that user: a symlink named like a file we are about to write would make root truncate
or overwrite its target. Two rules, used together:

* `drop_to_state_owner`: a command run as root that only needs the state dir becomes
  its owner (groups, gid, uid; irreversibly) before touching anything, so every file it
  creates (SQLite's WAL and lock files included) belongs to the kiosk and no link it
  follows can reach further than the kiosk user could. `qrpos doctor` and `qrpos
  verify` need root for the credential store alone, so they act as the owner
  (`acting_as_state_owner`) and take root back only for that (`as_root`).
* `write_private` / `probe_write`: the files root tools write themselves are created
  relative to a directory descriptor with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a
  fresh random name (an existing name or a symlink makes the open fail rather than be
  followed), checked with ``fstat``, handed to the dir's owner, then renamed over the
  final name (a rename replaces a planted link instead of following it).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from qrpos.errors import QrposError
from qrpos.said import say

#: mode of every file qrpos creates in the state dir: only the kiosk user reads it
PRIVATE_MODE = 0o600


class UnsafeStateDir(QrposError, OSError):
    """The state dir or a file in it is not what we may safely write to."""


@contextlib.contextmanager
def _dir_fd(state_dir: Path) -> Iterator[int]:
    fd = os.open(state_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def _ensure_dir(state_dir: Path) -> None:
    # 0700: created by root here only when no installer made it first
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)


def _create_exclusive(dfd: int, name: str, mode: int) -> int:
    """Create `name` in the directory `dfd`, never following or reusing what is there."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, mode, dir_fd=dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise UnsafeStateDir(
            say("error.unsafe_file", "{name} is not a new regular file", name=name)
        )
    owner = os.fstat(dfd)
    if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (owner.st_uid, owner.st_gid):
        os.fchown(fd, owner.st_uid, owner.st_gid)
    os.fchmod(fd, mode)
    return fd


def write_private(state_dir: Path, name: str, data: bytes, mode: int = PRIVATE_MODE) -> Path:
    """Atomically replace `state_dir/name` with `data`: owned by the dir's owner, `mode`.

    Safe against a planted symlink at the final name or at any temporary name.
    """
    _ensure_dir(state_dir)
    with _dir_fd(state_dir) as dfd:
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        fd = _create_exclusive(dfd, tmp, mode)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        os.fsync(dfd)
    return state_dir / name


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable: until its directory is synced, a power cut
    may bring the old file back (or none) however well the new file's bytes were synced."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: Path, data: bytes) -> Path:
    """Replace `path` with `data` so that a power cut leaves the old file or the new one,
    whole: a temporary file beside it, its bytes synced, renamed over `path`, then the
    directory synced. For files a person takes away (a CSV on a USB stick pulled out soon
    after); the state dir's own files go through `write_private`. Raises OSError."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        with tmp.open("xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)
    return path


def probe_write(state_dir: Path) -> None:
    """Prove the state dir takes a synced write (for `qrpos doctor`); leaves nothing."""
    _ensure_dir(state_dir)
    with _dir_fd(state_dir) as dfd:
        name = f".doctor-write-test.{secrets.token_hex(8)}"
        fd = _create_exclusive(dfd, name, PRIVATE_MODE)
        try:
            os.write(fd, b"ok")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(name, dir_fd=dfd)


def _owner_ids(state_dir: Path) -> tuple[int, int, list[int]] | None:
    """(uid, gid, groups) of the state dir's owner, when root should become it."""
    if os.geteuid() != 0:
        return None
    try:
        st = state_dir.stat()
    except OSError:
        return None
    if st.st_uid == 0:
        return None
    try:
        groups = os.getgrouplist(pwd.getpwuid(st.st_uid).pw_name, st.st_gid)
    except KeyError:
        groups = [st.st_gid]  # an owner without a passwd entry: its own group only
    return st.st_uid, st.st_gid, groups


def drop_to_state_owner(state_dir: Path) -> bool:
    """Run as root: become the state dir's owner for good. True if privileges dropped.

    Does nothing when not root, when the state dir does not exist yet, or when root
    owns it (then there is no kiosk user to become, and nobody else can plant links).
    """
    ids = _owner_ids(state_dir)
    if ids is None:
        return False
    uid, gid, groups = ids
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)
    os.umask(0o077)
    return True


@contextlib.contextmanager
def acting_as_state_owner(state_dir: Path) -> Iterator[bool]:
    """Like `drop_to_state_owner`, but only the effective ids, restored at the end.

    For the root tools that still need root for one thing (`qrpos doctor` and `qrpos
    verify` decrypt the credential store): that one step runs under `as_root()`.
    The real uid stays 0, so the kiosk user cannot signal or trace this process.
    """
    ids = _owner_ids(state_dir)
    if ids is None:
        yield False
        return
    uid, gid, groups = ids
    saved_groups, saved_egid, saved_umask = os.getgroups(), os.getegid(), os.umask(0o077)
    os.setgroups(groups)
    os.setegid(gid)
    os.seteuid(uid)
    try:
        yield True
    finally:
        os.seteuid(0)
        os.setegid(saved_egid)
        os.setgroups(saved_groups)
        os.umask(saved_umask)


@contextlib.contextmanager
def as_root() -> Iterator[None]:
    """Inside `acting_as_state_owner`: root again for the duration; elsewhere a no-op."""
    if os.getuid() != 0 or os.geteuid() == 0:
        yield
        return
    uid, gid = os.geteuid(), os.getegid()
    os.seteuid(0)
    os.setegid(os.getgid())
    try:
        yield
    finally:
        os.setegid(gid)
        os.seteuid(uid)
