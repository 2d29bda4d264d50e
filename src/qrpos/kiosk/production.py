"""`qrpos run`: the kiosk's services from the configuration, the stored password and the
configured camera. Without a stored password the kiosk opens on its pairing screen."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from qrpos.config import Config, write_pairing
from qrpos.credentials import CredentialsMissing, load_password, store_password
from qrpos.identity import check_machine
from qrpos.kiosk.peripherals import (
    till_customer_display,
    till_handheld,
    till_printing,
    till_sounds,
)
from qrpos.ledger import ChargeDesk, Ledger
from qrpos.metrics import KioskFacts, MetricsWriter, gather
from qrpos.scanner import ChosenAtOpen, ScanLoop, make_decoder
from qrpos.service import TerminalClient
from qrpos.tui.services import KioskServices, ScanEventRelay

log = logging.getLogger("qrpos.kiosk")


@contextlib.contextmanager
def production_services(
    config: Config, on_step: Callable[[str], None] = lambda step: None
) -> Iterator[KioskServices]:
    """Open the outbox and the camera; a client only when a password is stored. A state
    dir made on another machine (a cloned card) raises `ClonedStateDir` first.
    `on_step` hears each part as it starts (the keys of `qrpos.tui.startup.STEPS`)."""
    if not config.base_url:
        config.require_service()  # raises ConfigError naming the setting
    base_url = config.base_url or ""
    with contextlib.ExitStack() as stack:
        on_step("outbox")
        # a state dir copied from another card is refused before its outbox is opened
        check_machine(config.state_dir)
        ledger = Ledger.open(config.ledger_path)
        stack.callback(ledger.close)

        def make_client(username: str, password: str) -> TerminalClient:
            return TerminalClient(base_url, username, password, timeout_s=config.request_timeout_s)

        def store_pairing(username: str, password: str) -> str:
            where = store_password(username, password)
            write_pairing(config.state_dir, username)
            return where

        def open_desk(client: TerminalClient) -> ChargeDesk:
            return ChargeDesk(ledger, client)

        on_step("service")
        client: TerminalClient | None = None
        if config.username:
            try:
                client = make_client(config.username, load_password(config.username))
            except CredentialsMissing:
                client = None
        on_step("camera")
        relay = ScanEventRelay()
        # chosen at each open: a kiosk without its camera stays up and finds it later
        scanner = ScanLoop(
            ChosenAtOpen(config.scanner), make_decoder(config.scanner.get("decoder")), relay
        )
        stack.callback(scanner.stop)
        handheld = till_handheld(config, scanner)
        if handheld is not None:
            handheld.start()
            stack.callback(handheld.stop)
        services = KioskServices(
            config=config,
            desk=open_desk(client) if client is not None else None,
            client=client,
            scanner=scanner,
            scan_events=relay,
            make_client=make_client,
            store_pairing=store_pairing,
            open_desk=open_desk,
            sounds=till_sounds(config),
            printing=till_printing(config, ledger, stack),
            customer_display=till_customer_display(config, stack, scanner=scanner),
        )
        stack.callback(_write_metrics(services, ledger, scanner).stop)
        yield services


def _write_metrics(services: KioskServices, ledger: Ledger, scanner: ScanLoop) -> MetricsWriter:
    """The kiosk's metrics for node_exporter, every 30 s (no port; see qrpos.metrics)."""

    def facts() -> KioskFacts:
        client = services.client
        return gather(
            ledger=ledger,
            contact=client.contact if client is not None else None,
            username=client.username if client is not None else services.config.username,
            camera=scanner.stats,
        )

    writer = MetricsWriter(facts)
    writer.start()
    return writer
