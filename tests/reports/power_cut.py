"""A power cut for tests: what the disk holds afterwards if the kernel lost every write
that was not made durable.

The model is the one ext4 (data=ordered, delayed allocation) gives a Raspberry Pi's SD
card in practice, and the one the kiosk's files are written against:

* a rename (`os.replace`, which `Path.replace` calls) is durable only once its directory
  was synced (`os.fsync` of a directory descriptor) after it; until then a cut brings the
  old file back, or no file where there was none;
* a file renamed into place whose bytes were never synced survives a cut empty (the
  rename reached the journal, its data blocks did not).

`PowerCut` watches `os.replace` and `os.fsync` (a seam we own: the test patches them in
the process under test) and `cut()` rewrites the watched directory as such a disk would
hold it. Writes that do not go through a rename (a file written in place) are not
modelled: tests/reports/test_durable_files.py names every such write in src/ and why it
may lose its last seconds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def _path_of_fd(fd: int) -> Path:
    return Path(f"/proc/self/fd/{fd}").readlink()


def _resolve(name: Any, dir_fd: int | None) -> Path:
    path = Path(os.fsdecode(name))
    if dir_fd is not None and not path.is_absolute():
        path = _path_of_fd(dir_fd) / path
    return path.absolute()


@dataclass
class _Rename:
    target: Path
    before: bytes | None  # the target's bytes before the rename (None: no file)
    data_synced: bool
    dir_synced: bool = False


class PowerCut:
    """Watches renames and syncs under `root`; `cut()` leaves what a cut would."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root.absolute()
        self._synced: set[Path] = set()
        self._renames: list[_Rename] = []
        real_replace: Callable[..., None] = os.replace
        real_fsync: Callable[[int], None] = os.fsync

        def fsync(fd: int) -> None:
            real_fsync(fd)
            path = _path_of_fd(fd)
            if path.is_dir():
                for rename in self._renames:
                    if rename.target.parent == path:
                        rename.dir_synced = True
            else:
                self._synced.add(path)

        def replace(src: Any, dst: Any, *, src_dir_fd: int | None = None,
                    dst_dir_fd: int | None = None) -> None:  # fmt: skip
            source = _resolve(src, src_dir_fd)
            target = _resolve(dst, dst_dir_fd)
            if self.root in target.parents:
                before = target.read_bytes() if target.is_file() else None
                self._renames.append(_Rename(target, before, source in self._synced))
            real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
            self._synced.discard(source)
            last = self._renames[-1] if self._renames else None
            if last is not None and last.target == target and last.data_synced:
                self._synced.add(target)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)

    def cut(self) -> list[str]:
        """Rewrite the files as the disk would hold them after a cut now; returns what
        was lost, a line each (empty when every write was durable)."""
        lost: list[str] = []
        final: dict[Path, bytes | None] = {}
        # undo, newest first, every rename whose directory was not synced after it
        for rename in reversed(self._renames):
            if not rename.dir_synced:
                final[rename.target] = rename.before
                lost.append(f"{rename.target.name}: rename not durable (directory not synced)")
            elif not rename.data_synced and rename.target not in final:
                final[rename.target] = b""
                lost.append(f"{rename.target.name}: bytes not synced before the rename")
        for target, content in final.items():
            if content is None:
                target.unlink(missing_ok=True)
            else:
                target.write_bytes(content)
        self._renames.clear()
        return lost
