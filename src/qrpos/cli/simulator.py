"""`qrpos simulator`: the sandbox service alone, for development, demos and integrators."""

from __future__ import annotations

import argparse
import logging
import socket
from pathlib import Path
from typing import Any

from qrpos.cli import usage
from qrpos.cli.common import EXIT_LOCAL_ERROR, EXIT_OK, fail
from qrpos.present.i18n import t
from qrpos.present.words import error_words, words
from qrpos.said import os_reason


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "simulator",
        help=t("help.simulator.summary"),
        description=(t("help.simulator.about")),
    )
    p.add_argument("--host", default="127.0.0.1", help=t("help.simulator.host"))
    p.add_argument(
        "--port",
        type=usage.bounded_int(0, 65535),
        default=8080,
        help=t("help.simulator.port"),
    )
    p.add_argument("--db", type=Path, help=t("help.simulator.db"))
    p.add_argument(
        "--vat-delay",
        type=float,
        metavar="S",
        help=t("help.simulator.vat_delay"),
    )
    p.add_argument(
        "--clock-offset",
        type=usage.offset_seconds,
        default=0.0,
        metavar="S",
        help=t("help.simulator.clock_offset"),
    )
    p.add_argument(
        "--no-rate-limit",
        action="store_true",
        help=t("help.simulator.no_rate_limit"),
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; prints the base URL on stdout, logs on stderr."""
    import uvicorn

    from qrpos.simulator import Sandbox, SimulatorOptions, create_app
    from qrpos.simulator.server import uvicorn_config

    options = SimulatorOptions(
        db_path=args.db,
        rate_limit_enabled=not args.no_rate_limit,
        clock_offset_s=args.clock_offset,
    )
    if args.vat_delay is not None:
        if args.vat_delay < 0:
            return fail(t("cli.simulator.negative_delay"))
        options.vat_issue_delay_s = options.vat_void_delay_s = args.vat_delay
    try:
        sandbox = Sandbox(options)
    except Exception as exc:  # an unreadable --db file, most likely
        return fail(t("cli.simulator.cannot_open", why=error_words(exc)))
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        sock.close()
        where = f"{args.host}:{args.port}"
        return fail(t("cli.simulator.cannot_listen", where=where, why=words(os_reason(exc))))
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"http://{shown}:{port}", flush=True)
    log = logging.getLogger("qrpos.simulator")
    logging.getLogger("qrpos.simulator").setLevel(logging.INFO)
    log.info(
        "sandbox on http://%s:%d (state: %s, VAT delay %gs, rate limit %s)",
        shown,
        port,
        options.db_path or "memory",
        options.vat_issue_delay_s,
        "on" if options.rate_limit_enabled else "off",
    )
    server = uvicorn.Server(uvicorn_config(create_app(sandbox), args.host, port, log_level="info"))
    try:
        server.run(sockets=[sock])
    finally:
        sandbox.close()
        sock.close()
    return EXIT_OK if server.started else EXIT_LOCAL_ERROR
