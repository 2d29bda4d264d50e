"""`qrpos metrics --once`: write the kiosk's metrics file without the kiosk running.

For an installer's check after provisioning (does node_exporter serve `qrpos_*`?), or
to refresh the sales figures while the kiosk is stopped for maintenance. Deliberately
not on a systemd timer: while the kiosk is down the file must go stale, because its age
(`node_textfile_mtime_seconds`) is how Prometheus learns the kiosk is silent. Reads the
outbox and sends one `GET /health` for reachability. Exit codes: 0 written, 1 not.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from qrpos.cli.common import EXIT_LOCAL_ERROR, EXIT_OK, SETUP_ERRORS, config_from_args, fail
from qrpos.config import Config
from qrpos.present.i18n import t
from qrpos.present.words import error_words, words
from qrpos.said import os_reason


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "metrics",
        help=t("help.metrics.summary"),
        description=t("help.metrics.about"),
    )
    p.add_argument("--once", action="store_true", help=t("help.metrics.once"))
    p.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help=t("help.metrics.dir"),
    )
    p.set_defaults(func=run)


async def _reachable(config: Config) -> Any:
    """The client after one probe (its contact log says reachable or not), or None."""
    from qrpos.cli.common import client_from_config

    try:
        client = client_from_config(config)
    except SETUP_ERRORS:
        return None
    async with client:
        await client.health()
    return client


def run(args: argparse.Namespace) -> int:
    from qrpos import metrics
    from qrpos.ledger import Ledger, LedgerError

    try:
        config = config_from_args(args)
    except SETUP_ERRORS as exc:
        return fail(exc)
    client = asyncio.run(_reachable(config)) if config.base_url else None
    ledger = None
    try:
        if config.ledger_path.exists():
            ledger = Ledger.open(config.ledger_path)
        facts = metrics.gather(
            ledger=ledger,
            contact=client.contact if client is not None else None,
            username=config.username,
            camera=None,
        )
        path = metrics.write(facts, args.dir)
    except LedgerError as exc:
        return fail(t("cli.metrics.not_written", why=error_words(exc)), EXIT_LOCAL_ERROR)
    except OSError as exc:
        why = f"{args.dir or ''} {words(os_reason(exc))}".strip()
        return fail(t("cli.metrics.not_written", why=why))
    finally:
        if ledger is not None:
            ledger.close()
    print(t("cli.metrics.wrote", path=path))
    return EXIT_OK
