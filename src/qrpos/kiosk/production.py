"""`qrpos run`: the kiosk's services from the configuration, the stored password and the
configured camera. Without a stored password (or without a base URL: a fresh card) the
kiosk opens on its pairing screen; under systemd (`QRPOS_PAIR_SOCKET`) the pairing goes to
root, which stores it as the encrypted credential (qrpos.kiosk.pair_helper)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from qrpos.config import Config, write_pairing
from qrpos.credentials import CredentialsMissing, load_password, store_password
from qrpos.identity import check_machine
from qrpos.kiosk.pair_helper import hand_to_root
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
from qrpos.tui.services import KioskServices, ScanEventRelay, ServiceAddress

log = logging.getLogger("qrpos.kiosk")


@contextlib.contextmanager
def production_services(
    config: Config,
    on_step: Callable[[str], None] = lambda step: None,
    env: Mapping[str, str] | None = None,
) -> Iterator[KioskServices]:
    """Open the outbox and the camera; a client only when a base URL and a password are
    stored. A state dir made on another machine (a cloned card) raises `ClonedStateDir`
    first. `on_step` hears each part as it starts (the keys of `qrpos.tui.startup.STEPS`).
    `env` (os.environ) may name root's pairing socket, `QRPOS_PAIR_SOCKET`."""
    env = os.environ if env is None else env
    address = ServiceAddress(config.base_url)
    pair_socket = env.get("QRPOS_PAIR_SOCKET")
    with contextlib.ExitStack() as stack:
        on_step("outbox")
        # a state dir copied from another card is refused before its outbox is opened
        check_machine(config.state_dir)
        ledger = Ledger.open(config.ledger_path)
        stack.callback(ledger.close)

        def make_client(username: str, password: str) -> TerminalClient:
            if not address.value:
                config.require_service()  # raises ConfigError naming the setting
            base_url = address.value or ""
            return TerminalClient(base_url, username, password, timeout_s=config.request_timeout_s)

        def store_pairing(username: str, password: str) -> str:
            if pair_socket:
                # a kiosk under systemd: root verifies again and encrypts the credential
                where = hand_to_root(Path(pair_socket), address.value or "", username, password)
            else:
                where = store_password(username, password)
            write_pairing(config.state_dir, username)
            return where

        def open_desk(client: TerminalClient) -> ChargeDesk:
            return ChargeDesk(ledger, client)

        on_step("service")
        client: TerminalClient | None = None
        if config.username and address.value:
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
            service_address=address,
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
