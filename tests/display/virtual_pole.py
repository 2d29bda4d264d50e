"""A virtual pole display: a pseudo-terminal whose far end keeps every byte sent to it,
reached through a link as a USB-serial display is (/dev/serial/by-id/...). Unplugging it
closes the pseudo-terminal and removes the link; plugging it in again makes a new one."""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
import tty
from pathlib import Path


class VirtualPole:
    """`path` is the display's device; `received` every byte it took, in order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.received = b""
        self._lock = threading.Lock()
        self._master: int | None = None
        self._slave: int | None = None
        self._stop_r: int | None = None
        self._stop_w: int | None = None
        self.plug()

    def plug(self) -> None:
        """A new pseudo-terminal behind the link (a different /dev/pts/N, as after a
        real replug)."""
        master, slave = os.openpty()
        tty.setraw(slave)
        self._master, self._slave = master, slave
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.path.symlink_to(os.ttyname(slave))
        self._stop_r, self._stop_w = os.pipe()
        self._reader = threading.Thread(target=self._read, args=(master, self._stop_r), daemon=True)
        self._reader.start()

    def unplug(self) -> None:
        """The cable pulled: the link and the pseudo-terminal are gone."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        # the reader lets go of the far end first: a read blocked in another thread keeps
        # it open past close(), and a port the sink still holds would not see it go
        if self._stop_w is not None:
            os.write(self._stop_w, b"x")
            self._reader.join(timeout=5)
        for fd in (self._slave, self._master, self._stop_r, self._stop_w):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._slave = self._stop_r = self._stop_w = None

    def _read(self, master: int, stop: int) -> None:
        while True:
            try:
                ready, _, _ = select.select([master, stop], [], [])
                if master not in ready:
                    return  # unplugged
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.received += chunk

    def frames(self) -> list[bytes]:
        """The updates received, each a whole frame beginning with ESC @."""
        with self._lock:
            data = self.received
        return [b"\x1b@" + part for part in data.split(b"\x1b@")[1:]]

    def until(self, predicate: object, timeout: float = 5.0) -> None:
        """Wait until `predicate()` holds (fails after `timeout`)."""
        assert callable(predicate)
        give_up = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > give_up:
                raise AssertionError(f"timed out; the display has {self.frames()!r}")
            time.sleep(0.01)
