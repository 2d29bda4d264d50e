"""The till simulator's deterministic event loop, virtual clocks and inline outbox.

`VirtualLoop` is an asyncio loop with no selector: when no callback is ready it jumps
its clock to the next timer instead of sleeping (virtual time), and a loop with nothing
ready and nothing scheduled is a deadlock (`Stuck`), never a hang. `InlineExecutor` is the
outbox's "owner thread" run inline: each read or write runs whole, at the moment the
simulated code asks for it, in the simulated loop (no thread). `VirtualClocks` are the
kiosk's boot clock, its wall clock and the service's wall clock; `patched_world` points the
product's clock, uuid and id seams at them for the length of a run, and puts them back.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import random
import secrets
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

from qrpos.ledger import store as store_module
from qrpos.ledger.store import Ledger

T = TypeVar("T")

#: the true wall clock at virtual second 0 (2026-06-01 00:00 UTC, a Monday)
EPOCH = 1_780_272_000.0
#: the kiosk's boot clock at virtual second 0 (it has been up for an hour)
BOOT_UP0 = 3600.0
#: the one boot of the simulated kiosk (a kill restarts the process, not the Pi)
BOOT_ID = "tillsim-boot-0000"


class Stuck(RuntimeError):
    """Nothing ready and nothing scheduled: the simulated world waits on nothing."""


class Killed(BaseException):
    """The simulated process is dead: its outbox connection is gone."""


class _NoSelector:
    def __init__(self, loop: VirtualLoop) -> None:
        self._loop = loop

    def select(self, timeout: float | None) -> list[Any]:
        if timeout is None:
            raise Stuck("the simulated loop has nothing ready and nothing scheduled")
        if timeout > 0:
            self._loop.vt += timeout
        return []

    def close(self) -> None:
        pass


class VirtualLoop(asyncio.BaseEventLoop):
    """An asyncio loop on virtual time: it never sleeps and never touches a socket."""

    def __init__(self) -> None:
        super().__init__()
        self.vt = 0.0
        self._selector = _NoSelector(self)

    def time(self) -> float:
        return self.vt

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass


class InlineExecutor(concurrent.futures.Executor):
    """The outbox's owner "thread" run inline; `dead` after a kill (every call raises)."""

    def __init__(self) -> None:
        self.dead = False

    def submit(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        if self.dead:
            raise Killed("the process was killed")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def open_inline_ledger(path: Path) -> tuple[Ledger, InlineExecutor]:
    """`Ledger.open` with the inline executor: the same connect, check and migrations."""
    executor = InlineExecutor()
    conn = store_module._connect(path)
    ledger = Ledger(path, executor, conn)  # type: ignore[arg-type]
    ledger._check_and_migrate()
    return ledger, executor


def drop_ledger(ledger: Ledger, executor: InlineExecutor) -> None:
    """What a crash does to the process's outbox: the connection is gone (nothing open:
    every transaction ran whole, inline), its committed writes stay in the file."""
    executor.dead = True
    with contextlib.suppress(sqlite3.Error):
        ledger._conn.close()
    ledger._closed = True


class VirtualClocks:
    """The kiosk's boot clock and wall clock and the true time, read off the loop."""

    def __init__(self, loop: VirtualLoop) -> None:
        self.loop = loop
        #: the kiosk's wall clock minus the true time (NTP steps it by hours)
        self.kiosk_offset_s = 0.0

    def up(self) -> float:
        return BOOT_UP0 + self.loop.vt

    def true_wall(self) -> float:
        return EPOCH + self.loop.vt

    def kiosk_wall(self) -> float:
        return self.true_wall() + self.kiosk_offset_s

    def kiosk_now(self) -> datetime:
        return datetime.fromtimestamp(self.kiosk_wall(), UTC)

    def true_now(self) -> datetime:
        return datetime.fromtimestamp(self.true_wall(), UTC)

    def boot_stamp(self) -> tuple[str | None, float | None]:
        return BOOT_ID, self.up()


def _datetime_on(clock: Callable[[], datetime]) -> type[datetime]:
    class VirtualDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return clock() if tz is not None else clock().replace(tzinfo=None)

    return VirtualDatetime


@contextlib.contextmanager
def patched_world(clocks: VirtualClocks, rng: random.Random) -> Iterator[None]:
    """Point the product's clock, key and id seams at the virtual world, and back after.

    The kiosk reads `time.monotonic` (its deadlines: the boot clock), `time.time` and
    `datetime.now` (its wall clock), `uuid.uuid4` (idempotency keys); the sandbox reads
    `time.time` for its Date header and `secrets.choice` for its ids. Each module's own
    name is replaced, so nothing outside the run sees virtual time.
    """
    import qrpos.ledger.clock as ledger_clock
    import qrpos.ledger.context as context
    import qrpos.ledger.desk as desk
    import qrpos.ledger.listing as listing
    import qrpos.ledger.resolver as resolver
    import qrpos.ledger.reversals as reversals
    import qrpos.service.client as client
    import qrpos.service.contact as contact
    import qrpos.service.status as status
    import qrpos.simulator.http as sim_http
    import qrpos.simulator.model as sim_model

    kiosk_time = SimpleNamespace(monotonic=clocks.up, time=clocks.kiosk_wall)
    service_time = SimpleNamespace(monotonic=clocks.up, time=clocks.true_wall)
    kiosk_dt = _datetime_on(clocks.kiosk_now)

    def uuid4() -> uuid.UUID:
        return uuid.UUID(int=rng.getrandbits(128), version=4)

    def token_urlsafe(nbytes: int) -> str:
        return base64.urlsafe_b64encode(rng.randbytes(nbytes)).rstrip(b"=").decode("ascii")

    patches: list[tuple[Any, str, Any]] = [
        (desk, "time", kiosk_time),
        (resolver, "time", kiosk_time),
        (reversals, "time", kiosk_time),
        (context, "time", kiosk_time),
        (listing, "time", kiosk_time),
        (client, "time", kiosk_time),
        (contact, "time", kiosk_time),
        (client, "datetime", kiosk_dt),
        (status, "datetime", kiosk_dt),
        (desk, "uuid", SimpleNamespace(uuid4=uuid4)),
        (sim_http, "time", service_time),
        (
            sim_model,
            "secrets",
            SimpleNamespace(
                choice=rng.choice,
                token_urlsafe=token_urlsafe,
                token_hex=lambda n: rng.randbytes(n).hex(),
                randbelow=rng.randrange,
                compare_digest=secrets.compare_digest,
            ),
        ),
        (ledger_clock, "BOOT_ID", BOOT_ID),
        (ledger_clock, "uptime_s", clocks.up),
    ]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]
    try:
        for mod, name, value in patches:
            setattr(mod, name, value)
        yield
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)
