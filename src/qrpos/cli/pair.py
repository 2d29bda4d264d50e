"""`qrpos pair`: prove a terminal's username and password live, then store them.

The proof is the spec's only one: `GET /v1/transactions?limit=1` answering 200. The
password goes to the keyring (a desktop); on a kiosk, where nothing can store it,
deploy/provision.sh verifies with `--no-store` and keeps it as an encrypted systemd
credential. The username (not a secret) is recorded in the state dir.

Exit codes: 0 paired, 4 rejected by the service, 1 anything local (unreachable service,
malformed input, nowhere to store the password), 64 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from qrpos import manager_pin
from qrpos.cli import usage
from qrpos.cli.common import (
    EXIT_CREDENTIALS,
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    SETUP_ERRORS,
    config_from_args,
    fail,
)
from qrpos.config import write_pairing
from qrpos.credentials import CredentialStoreUnavailable, check_password_shape, store_password
from qrpos.present.i18n import t
from qrpos.present.words import error_words, words
from qrpos.service import TerminalClient
from qrpos.service.outcomes import CredentialsRejected, Page, RateLimited, Unresolved


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "pair",
        help=t("help.pair.summary"),
        description=(t("help.pair.about")),
    )
    p.add_argument(
        "--password-stdin",
        action="store_true",
        help=t("help.pair.password_stdin"),
    )
    p.add_argument(
        "--manager-pin-stdin",
        action="store_true",
        help=t("help.pair.manager_pin_stdin"),
    )
    p.add_argument(
        "--no-store",
        action="store_true",
        help=t("help.pair.no_store"),
    )
    p.set_defaults(func=run)


@dataclass(frozen=True)
class Verification:
    """What the service said about a username/password pair."""

    live: bool
    #: True only for a 401: the pair is wrong, suspended or rotated
    rejected: bool
    message: str


async def verify_credentials(client: TerminalClient) -> Verification:
    """Ask `GET /v1/transactions?limit=1`; 200 is the only proof the pair is live."""
    outcome = await client.verify_credentials()
    if isinstance(outcome, Page):
        return Verification(True, False, t("cli.pair.live"))
    if isinstance(outcome, CredentialsRejected):
        return Verification(False, True, t("cli.pair.rejected"))
    if isinstance(outcome, Unresolved):
        return Verification(False, False, t("cli.pair.unreachable", reason=words(outcome.why)))
    if isinstance(outcome, RateLimited):
        return Verification(False, False, t("cli.pair.busy"))
    return Verification(False, False, t("cli.pair.refused", message=outcome.message))


def _read_secret(stream: TextIO, from_stdin: bool, prompt: str) -> str:
    if from_stdin:
        return usage.read_stdin_line(stream)
    return getpass.getpass(prompt)


def _check_pin(pin: str) -> str | None:
    digits = pin.isascii() and pin.isdigit()
    if not digits or not manager_pin.MIN_LEN <= len(pin) <= manager_pin.MAX_LEN:
        return t("pair.bad_pin")
    return None


def run(args: argparse.Namespace) -> int:
    """Verify, then store; nothing is stored unless the service said 200."""
    try:
        config = config_from_args(args)
    except SETUP_ERRORS as exc:
        return fail(exc)
    if not config.username:
        return fail(t("cli.pair.no_username"), EXIT_USAGE)
    if not config.base_url:
        return fail(t("cli.pair.no_base_url"))
    if not args.password_stdin and not sys.stdin.isatty():
        return fail(t("cli.pair.no_tty"), EXIT_USAGE)
    password = _read_secret(sys.stdin, args.password_stdin, f"{t('pair.password')}: ")
    try:
        check_password_shape(password)
    except ValueError as exc:
        return fail(exc)
    pin: str | None = None
    if args.manager_pin_stdin:
        pin = _read_secret(sys.stdin, True, "")
        problem = _check_pin(pin)
        if problem:
            return fail(problem)
    try:
        client = TerminalClient(
            config.base_url, config.username, password, timeout_s=config.request_timeout_s
        )
    except SETUP_ERRORS as exc:
        return fail(exc)
    verdict = asyncio.run(_verify_and_close(client))
    if not verdict.live:
        return fail(verdict.message, EXIT_CREDENTIALS if verdict.rejected else EXIT_LOCAL_ERROR)
    where = t("cli.pair.not_stored")
    if not args.no_store:
        try:
            where = t("cli.pair.stored", backend=store_password(config.username, password))
        except CredentialStoreUnavailable as exc:
            return fail(t("cli.pair.store_failed", message=error_words(exc)))
    pairing_file = write_pairing(config.state_dir, config.username)
    if pin is not None:
        manager_pin.set_pin(config.state_dir, pin)
    print(t("cli.pair.paired", username=config.username, message=verdict.message))
    print(t("cli.pair.where", where=where, path=pairing_file))
    if pin is not None:
        print(t("cli.pair.pin_set", path=config.state_dir / manager_pin.PIN_FILE))
    return EXIT_OK


async def _verify_and_close(client: TerminalClient) -> Verification:
    async with client:
        return await verify_credentials(client)
