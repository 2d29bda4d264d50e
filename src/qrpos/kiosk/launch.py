"""Running the kiosk app: the one place outside `qrpos.tui` that loads the Textual app.

`qrpos run` and `qrpos demo` (`qrpos.cli.kiosk`) call `run_kiosk` with a factory of the
services; the app draws its first screen, then builds them in a thread worker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Final

from qrpos import memory, notify
from qrpos.config import Config
from qrpos.kiosk.starter import ContextStarter
from qrpos.tui.services import KioskServices

#: the start's steps under systemd, each counted from its beginning (`notify.extend_start`):
#: importing the app (Textual and the rest: a Pi reads them off its card; an emulated CPU
#: took 80-100 s for the whole start, docs/installing.md), then drawing the first screen
IMPORT_STEP_S: Final = 240.0
FIRST_SCREEN_STEP_S: Final = 90.0

ServicesFactory = Callable[
    [Callable[[str], None]], contextlib.AbstractContextManager[KioskServices]
]


def run_kiosk(config: Config, factory: ServicesFactory) -> BaseException | None:
    """Run the kiosk until it exits; its services are built by `factory` after the
    first screen is drawn and stopped when the app has exited. Returns why the services
    could not be built (None when they were)."""
    # Textual loads here, when the kiosk really starts (not for `qrpos --help`): the
    # start's longest step, given its own time under systemd (`notify.extend_start`)
    notify.extend_start(IMPORT_STEP_S)
    from qrpos.tui.app import KioskApp

    notify.extend_start(FIRST_SCREEN_STEP_S)  # READY=1 goes out once it is drawn

    # before any frame is allocated: large buffers get pages of their own, freed for good
    memory.fix_mmap_threshold()

    starter = ContextStarter(factory)
    try:
        app = KioskApp(KioskServices(config=config), starter=starter)
        app.run()
    finally:
        starter.close()
    return app.startup_error


def production_factory(config: Config) -> ServicesFactory:
    """`qrpos run`: the outbox, the configured camera, the stored password."""

    def services(
        on_step: Callable[[str], None],
    ) -> contextlib.AbstractContextManager[KioskServices]:
        from qrpos.kiosk.production import production_services

        return production_services(config, on_step)

    return services


def demo_factory(config: Config) -> ServicesFactory:
    """`qrpos demo`: the embedded sandbox and the virtual phone, with the person's
    settings (`config`: state dir, language, where choices and exports go)."""
    return lambda on_step: demo_services(config, on_step)


@contextlib.contextmanager
def demo_services(config: Config, on_step: Callable[[str], None]) -> Iterator[KioskServices]:
    """The demo world's services (the sandbox stops when the context is left)."""
    from qrpos.kiosk.demo import demo_world
    from qrpos.kiosk.peripherals import till_sounds

    with demo_world(
        state_dir=config.state_dir,
        language=config.language,
        on_step=on_step,
        base=config,
        printer=True,
        peripherals=True,
    ) as world:
        world.services.sounds = till_sounds(config)
        yield world.services
