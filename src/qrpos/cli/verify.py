"""`qrpos verify`: the spec's production check, guided, with a clear verdict.

1. a real token (scanned, or --token), 2. a small charge through the outbox, 3. the
charge found in this terminal's history, 4. its reversal through the outbox, 5. its
`vatStatus` watched (polling, ~30 s by default) until `issued` and then `voided`.

Never calls /_sim: it uses only the three merchant operations, like production.
Interrupting it is safe: the outbox keeps the sale and `qrpos outbox resolve` settles it.
Exit codes: 0 passed, 2 declined/refused, 3 not settled in time, 4 credentials, 1 local.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from qrpos import spec
from qrpos.cli import usage
from qrpos.cli.charge import exit_code
from qrpos.cli.common import (
    EXIT_CREDENTIALS,
    EXIT_LOCAL_ERROR,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNRESOLVED,
    EXIT_USAGE,
    SETUP_ERRORS,
    client_from_config,
    config_from_args,
    fail,
)
from qrpos.config import Config
from qrpos.doctor import hand_back_state_files
from qrpos.errors import QrposError
from qrpos.ledger import ChargeDesk, ChargeRefusedLocally, Ledger, LedgerError, SaleProgress
from qrpos.present.format import elapsed, format_mnt
from qrpos.present.i18n import t
from qrpos.present.outcome import phase_text
from qrpos.present.owner import listing_failure, result_text, state_word
from qrpos.present.words import error_words
from qrpos.redact import token_tail
from qrpos.service import ListingFailed, TerminalClient
from qrpos.service.models import Transaction
from qrpos.service.outcomes import CredentialsRejected


class VerifyFailed(QrposError):
    """A step failed; `code` is the exit code, the message the verdict."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "verify",
        help=t("help.verify.summary"),
        description=(t("help.verify.about")),
    )
    p.add_argument("--token", type=usage.qr_token, help=t("help.verify.token"))
    p.add_argument("--amount", type=usage.amount_mnt, default=1, help=t("help.verify.amount"))
    p.add_argument(
        "--poll-interval",
        type=usage.seconds,
        default=spec.POLL_INTERVAL_S,
        metavar="S",
        help=t("help.verify.poll_interval", seconds=f"{spec.POLL_INTERVAL_S:g}"),
    )
    p.add_argument(
        "--vat-timeout",
        type=usage.seconds,
        default=900.0,
        metavar="S",
        help=t("help.verify.vat_timeout"),
    )
    p.add_argument(
        "--scan-timeout",
        type=usage.seconds,
        default=120.0,
        metavar="S",
        help=t("help.verify.scan_timeout"),
    )
    p.add_argument(
        "--deadline",
        type=usage.seconds,
        default=60.0,
        metavar="S",
        help=t("help.verify.deadline"),
    )
    p.set_defaults(func=run)


def say(step: str, text: str) -> None:
    """One progress line, flushed at once (a person is watching)."""
    print(f"[{step}] {text}", flush=True)


async def scan_token(config: Config, timeout_s: float) -> str:
    """Wait for the camera to read a `vqr_` token."""
    from qrpos.scanner import (
        CameraUnavailable,
        ScanLoop,
        ScanRefused,
        TokenRead,
        make_decoder,
        open_source,
    )

    decoder_name = config.scanner.get("decoder")
    try:
        source = open_source(config.scanner)
        decoder = make_decoder(str(decoder_name) if decoder_name else None)
    except CameraUnavailable as exc:
        raise VerifyFailed(
            t("cli.verify.camera", message=error_words(exc)), EXIT_LOCAL_ERROR
        ) from None
    loop = asyncio.get_running_loop()
    found: asyncio.Queue[str] = asyncio.Queue()

    def on_event(event: object) -> None:
        if isinstance(event, TokenRead):
            loop.call_soon_threadsafe(found.put_nowait, event.token)
        elif isinstance(event, ScanRefused):
            loop.call_soon_threadsafe(
                say, "scan", t("cli.verify.scan_refused", reason=event.reason)
            )

    scanner = ScanLoop(source, decoder, on_event)
    scanner.start()
    scanner.arm()
    say("scan", t("cli.verify.scan_show", seconds=f"{timeout_s:g}"))
    try:
        return await asyncio.wait_for(found.get(), timeout_s)
    except TimeoutError:
        raise VerifyFailed(t("cli.verify.scan_timeout"), EXIT_LOCAL_ERROR) from None
    finally:
        await asyncio.to_thread(scanner.stop)


async def find_in_history(client: TerminalClient, tx: Transaction) -> Transaction | None:
    """The transaction as the history shows it now, or None when it is not listed."""
    window_from = tx.created_at - timedelta(minutes=5)
    window_to = max(datetime.now(UTC), tx.created_at) + timedelta(minutes=5)
    try:
        async for row in client.iter_transactions(from_=window_from, to=window_to):
            if row.id == tx.id:
                return row
    except ListingFailed as exc:
        if isinstance(exc.outcome, CredentialsRejected):
            raise VerifyFailed(t("cli.verify.history_401"), EXIT_CREDENTIALS) from None
        say("history", t("cli.verify.history_unreadable", reason=listing_failure(exc.outcome)))
    return None


async def poll_history(
    client: TerminalClient, tx: Transaction, interval_s: float, timeout_s: float, want: str
) -> Transaction:
    """Poll until the history shows `tx` in the state `want` describes."""
    give_up = time.monotonic() + timeout_s
    while True:
        row = await find_in_history(client, tx)
        if row is not None and _matches(row, want):
            return row
        if time.monotonic() > give_up:
            seen = (
                t("cli.verify.last_seen", row=_describe(row)) if row else t("cli.verify.not_listed")
            )
            wanted = t(f"cli.verify.want.{want}")
            raise VerifyFailed(
                t(
                    "cli.verify.not_reached",
                    tx=tx.id,
                    want=wanted,
                    seconds=f"{timeout_s:g}",
                    seen=seen,
                ),
                EXIT_UNRESOLVED,
            )
        await asyncio.sleep(interval_s)


def _matches(row: Transaction, want: str) -> bool:
    if want == "listed":
        return True
    if want == "issued":
        # voided implies it was issued first (receipt number kept); accept either
        return row.vat_status in (spec.VatStatus.ISSUED, spec.VatStatus.VOIDED)
    return row.vat_status is spec.VatStatus.VOIDED


def _describe(row: Transaction) -> str:
    receipt = row.vat_receipt_id or t("cli.verify.no_receipt_yet")
    return t("cli.verify.describe", status=row.status, vat=row.vat_status, receipt=receipt)


async def _verify(args: argparse.Namespace, config: Config) -> int:
    token = args.token or await scan_token(config, args.scan_timeout)
    say("token", token_tail(token))
    client = client_from_config(config)
    ledger = Ledger.open(config.ledger_path)
    try:
        desk = ChargeDesk(ledger, client)
        return await _run_steps(args, desk, client, token)
    finally:
        ledger.close()
        hand_back_state_files(config.ledger_path.parent)
        await client.aclose()


async def _run_steps(
    args: argparse.Namespace, desk: ChargeDesk, client: TerminalClient, token: str
) -> int:
    def progress(p: SaleProgress) -> None:
        step = phase_text(p.phase, p.attempt)
        say("charge", t("cli.verify.charge_step", step=step, elapsed=elapsed(p.elapsed_s)))

    say("charge", t("cli.verify.charge_start", amount=format_mnt(args.amount)))
    sale = await desk.charge(args.amount, token, deadline_s=args.deadline, on_progress=progress)
    if not sale.sold or sale.transaction is None:  # charged and kept (`is_sold`), as the till says
        detail = f"{sale.decline_code or ''} {sale.message or ''}".strip()
        raise VerifyFailed(
            t("cli.verify.not_approved", state=state_word(sale.state), detail=detail).strip(),
            exit_code(sale) if exit_code(sale) != EXIT_OK else EXIT_UNRESOLVED,
        )
    tx = sale.transaction
    say("charge", t("cli.verify.approved", tx=tx.id, vat=tx.vat_status))
    print(f"        {t('cli.verify.reverse_hint', tx=tx.id)}")

    listed = await poll_history(client, tx, min(args.poll_interval, 5.0), 120.0, "listed")
    say("history", t("cli.verify.found", tx=tx.id, row=_describe(listed)))

    refund = await desk.reverse(tx.id, deadline_s=args.deadline)
    if refund.state != "refunded":
        code = {"refused": EXIT_REFUSED, "credentials_rejected": EXIT_CREDENTIALS}.get(
            refund.state, EXIT_UNRESOLVED
        )
        raise VerifyFailed(result_text(refund)[0], code)
    say("reverse", t("cli.verify.refunded", tx=tx.id, amount=format_mnt(args.amount)))

    interval, timeout = f"{args.poll_interval:g}", f"{args.vat_timeout:g}"
    say("vat", t("cli.verify.watching", interval=interval, timeout=timeout))
    issued = await poll_history(client, tx, args.poll_interval, args.vat_timeout, "issued")
    if not issued.vat_receipt_id:
        raise VerifyFailed(
            t("cli.verify.no_receipt", tx=tx.id, vat=issued.vat_status), EXIT_UNRESOLVED
        )
    say("vat", t("cli.verify.issued", receipt=issued.vat_receipt_id))
    voided = await poll_history(client, tx, args.poll_interval, args.vat_timeout, "voided")
    if voided.status is not spec.TxStatus.REVERSED:
        raise VerifyFailed(
            t("cli.verify.voided_wrong", tx=tx.id, status=voided.status), EXIT_UNRESOLVED
        )
    say("vat", t("cli.verify.voided", receipt=voided.vat_receipt_id, status=voided.status))
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    """Run the check and print the verdict."""
    if args.poll_interval <= 0 or args.vat_timeout <= 0 or args.deadline <= 0:
        options = "--poll-interval, --vat-timeout, --deadline"
        return fail(t("cli.positive", options=options), EXIT_USAGE)
    try:
        config = config_from_args(args)
        code = asyncio.run(_verify(args, config))
    except VerifyFailed as exc:
        print(f"\n{t('cli.verify.failed', reason=error_words(exc))}", file=sys.stderr)
        return exc.code
    except (*SETUP_ERRORS, LedgerError, ChargeRefusedLocally) as exc:
        print(f"\n{t('cli.verify.failed', reason=error_words(exc))}", file=sys.stderr)
        return EXIT_LOCAL_ERROR
    except KeyboardInterrupt:
        print(f"\n{t('cli.verify.interrupted')}", file=sys.stderr)
        return 130
    print(f"\n{t('cli.verify.passed')}")
    return code
