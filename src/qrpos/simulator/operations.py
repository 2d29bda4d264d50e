"""The service's own operations (charge, reverse, list, probes) on the sandbox state.

Each returns a `Reply`; the ASGI layer only turns replies into HTTP responses.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import secrets
from collections.abc import Mapping
from typing import Annotated

import msgspec
from msgspec import Meta, Struct, field

from qrpos import spec
from qrpos.service.models import TransactionPage, decode_charge_request
from qrpos.simulator import model
from qrpos.simulator.faults import Fault
from qrpos.simulator.listing import parse_list_query
from qrpos.simulator.model import Reply, SimTransaction, Terminal
from qrpos.simulator.state import IdempotencyEntry, SandboxState

#: the sandbox's answer to a reused key with a different body in "conflict" mode
IDEMPOTENCY_CONFLICT_TEXT = "idempotency key reused with a different request"
IDEMPOTENCY_REUSED_CODE = "idempotency_key_reused"


class _ChargeShape(Struct, forbid_unknown_fields=True):
    """A charge body whose amount may be any JSON value: read only to tell an integer
    too large for a decoder (the spec's "amount must be positive") from a non-integer."""

    qr_token: Annotated[str, Meta(min_length=1)] = field(name=spec.FIELD_QR_TOKEN)
    amount: msgspec.Raw = field(name=spec.FIELD_AMOUNT)


_CHARGE_SHAPE = msgspec.json.Decoder(_ChargeShape)


def _is_json_integer(raw: bytes) -> bool:
    """True for a JSON number without fraction or exponent, of any length."""
    digits = raw[1:] if raw[:1] == b"-" else raw
    return digits.isdigit() and (digits == b"0" or not digits.startswith(b"0"))


def parse_charge_body(body: bytes | None) -> tuple[str, int] | Reply:
    """(qrToken, amountMNT) from a charge body, or the 400 the spec prescribes.

    Any JSON integer outside 1..1,000,000 is `amount must be positive`, however large
    (an integer beyond what a decoder holds is out of range all the same); anything
    else that is not exactly a ChargeRequest is `invalid request body`.
    """
    invalid = Reply.error(400, spec.ErrorText.INVALID_BODY)
    if body is None or len(body) > spec.MAX_BODY_BYTES:
        return invalid
    try:
        request = decode_charge_request(body)
    except msgspec.ValidationError:
        try:
            shape = _CHARGE_SHAPE.decode(body)
        except (msgspec.DecodeError, UnicodeDecodeError):
            return invalid
        if _is_json_integer(bytes(shape.amount)):
            return Reply.error(400, spec.ErrorText.AMOUNT_NOT_POSITIVE)
        return invalid
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return invalid
    if not spec.amount_in_range(request.amount_mnt):
        return Reply.error(400, spec.ErrorText.AMOUNT_NOT_POSITIVE)
    return request.qr_token, request.amount_mnt


def valid_idempotency_key(key: str) -> bool:
    """1 to 255 *characters*: code points of its UTF-8, where a byte that is not UTF-8
    (a latin-1 header, say) counts as one character of its own."""
    return 0 < len(key) <= spec.IDEMPOTENCY_KEY_MAX_LEN


class ServiceOperations(SandboxState):
    """Charge, reverse and list as the service does them, with auth and the gateway."""

    # --- gateway and auth ---------------------------------------------------------------

    def admit(self) -> float | None:
        """The gateway ceiling: None to pass, else seconds until a request would."""
        with self.lock:
            if not self.options.rate_limit_enabled:
                return None
            return self.bucket.take()

    def take_fault(self, operation: str, kinds: tuple[str, ...] | None = None) -> Fault | None:
        """Consume the next armed fault that applies to this request, if any."""
        with self.lock:
            return self.faults.take(operation, kinds)

    def authenticate(self, authorization: str | None) -> Terminal | None:
        """The terminal of a Basic `Authorization` header, or None for any failure."""
        if not authorization:
            return None
        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        username, sep, password = decoded.partition(":")
        if not sep:
            return None
        return self.authenticate_basic(username, password)

    def authenticate_basic(self, username: str, password: str) -> Terminal | None:
        """The terminal these credentials open, or None (unknown, wrong or suspended)."""
        with self.lock:
            terminal = self.terminal_record(username)
            if terminal is None or terminal.suspended:
                return None
            if not secrets.compare_digest(terminal.password.encode(), password.encode()):
                return None
            return terminal

    # --- charge -------------------------------------------------------------------------

    def charge(self, terminal: Terminal, body: bytes | None, idempotency_key: str | None) -> Reply:
        """`POST /v1/transactions/charge-by-token` (rules 1-6 of the spec)."""
        parsed = parse_charge_body(body)
        if isinstance(parsed, Reply):
            return parsed
        token, amount = parsed
        if idempotency_key is not None and not valid_idempotency_key(idempotency_key):
            return Reply.error(400, spec.ErrorText.INVALID_BODY)
        with self.lock:
            self.advance_vat()
            if idempotency_key is not None:
                replay = self._idempotent_replay(terminal, idempotency_key, token, amount)
                if replay is not None:
                    return replay
            return self._charge_new(terminal, token, amount, idempotency_key)

    def _idempotent_replay(
        self, terminal: Terminal, key: str, token: str, amount: int
    ) -> Reply | None:
        slot = (terminal.username, key)
        if self.faults.take("charge", ("forget_idempotency",)) is not None:
            self._idempotency.pop(slot, None)
            self._save_idempotency(*slot, None)
        entry = self._idempotency.get(slot)
        if entry is None:
            return None
        retention = self.options.idempotency_retention_s
        if retention is not None and self.now_us() - entry.stored_us > retention * 1e6:
            del self._idempotency[slot]
            self._save_idempotency(*slot, None)
            return None
        if (entry.qr_token, entry.amount_mnt) == (token, amount):
            return Reply(201, json=dict(entry.response))
        mode = self.options.same_key_new_body
        if mode == "replay":
            return Reply(201, json=dict(entry.response))
        if mode == "conflict":
            return Reply.error(409, IDEMPOTENCY_CONFLICT_TEXT)
        if mode == "unprocessable":
            return Reply(422, json={"code": IDEMPOTENCY_REUSED_CODE})
        return None  # "new_charge": the key is ignored

    def _charge_new(self, terminal: Terminal, token: str, amount: int, key: str | None) -> Reply:
        if token in self._retired_tokens:
            return Reply.error(409, spec.ErrorText.TOKEN_USED)
        wallet_id = self._live_tokens.get(token)
        if wallet_id is None:
            return Reply(422, json={"code": spec.DeclineCode.TOKEN_INVALID.value})
        wallet = self._wallets[wallet_id]
        if wallet.suspended:
            return Reply(422, json={"code": spec.DeclineCode.WALLET_SUSPENDED.value})
        if wallet.balance_mnt < amount:
            return Reply(422, json={"code": spec.DeclineCode.INSUFFICIENT_FUNDS.value})
        created = self._next_created_us()
        tx = SimTransaction(
            id=model.new_tx_id(),
            amount_mnt=amount,
            status=spec.TxStatus.COMPLETED,
            type=spec.TxType.CHARGE,
            created_us=created,
            vat_status=spec.VatStatus.PENDING,
            terminal_id=terminal.terminal_id,
            username=terminal.username,
            merchant=terminal.merchant,
            wallet_id=wallet_id,
            vat_due_us=created + int(self.options.vat_issue_delay_s * 1e6),
        )
        wallet.balance_mnt -= amount
        self._retire_token(token, wallet_id)
        wallet.qr_token = model.new_qr_token()
        self._live_tokens[wallet.qr_token] = wallet_id
        self._index_tx(tx)
        response = msgspec.to_builtins(tx.to_wire())
        if key is not None:
            entry = IdempotencyEntry(tx.id, token, amount, self.now_us(), response)
            self._idempotency[(terminal.username, key)] = entry
            self._save_idempotency(terminal.username, key, entry)
        self._save_tx(tx)
        self._save_wallet(wallet)
        return Reply(201, json=dict(response))

    # --- reverse ------------------------------------------------------------------------

    def reverse(self, terminal: Terminal, tx_id: str) -> Reply:
        """`POST /v1/transactions/{txID}/reverse` (rules 1-5 of the spec)."""
        if not spec.TX_ID_RE.match(tx_id):
            return Reply.error(400, spec.ErrorText.INVALID_TX_ID)
        with self.lock:
            self.advance_vat()
            tx = self.tx(tx_id)
            if tx is None:
                return Reply.error(404, spec.ErrorText.TX_NOT_FOUND)
            if tx.type is not spec.TxType.CHARGE or tx.merchant != terminal.merchant:
                return Reply.error(403, spec.ErrorText.FORBIDDEN)
            if tx.status is spec.TxStatus.REVERSED:
                return Reply.error(409, spec.ErrorText.ALREADY_REVERSED)
            pending = tx.vat_status is spec.VatStatus.PENDING
            mode = self.options.reverse_pending_receipt
            if pending and mode == "error_until_issued":
                return Reply.error(500, spec.ErrorText.INTERNAL_ERROR)
            tx.status = spec.TxStatus.REVERSED
            wallet = self._wallets.get(tx.wallet_id or "")
            if wallet is not None:  # seeded history has no wallet behind it
                wallet.balance_mnt += tx.amount_mnt
                self._save_wallet(wallet)
            void_due = self.now_us() + int(self.options.vat_void_delay_s * 1e6)
            if not pending or mode == "void_without_number":
                self._schedule_vat(tx, void_due)
            self._save_tx(tx)
            return Reply(spec.REVERSE_SUCCESS_STATUS)

    # --- list ---------------------------------------------------------------------------

    def list_transactions(self, terminal: Terminal, query: Mapping[str, str]) -> Reply:
        """`GET /v1/transactions`: this terminal's charges, newest first, keyset paged."""
        parsed = parse_list_query(query, self.now_us())
        if isinstance(parsed, Reply):
            return parsed
        with self.lock:
            self.advance_vat()
            keys = self.history_keys(terminal.username)
            # Keys sort as (micros, id); "\x7f" sorts after every id character.
            hi = bisect.bisect_right(keys, (parsed.hi_us, "\x7f"))
            if parsed.after is not None:
                hi = min(hi, bisect.bisect_left(keys, parsed.after))
            lo = bisect.bisect_left(keys, (parsed.lo_us, ""))
            start = max(lo, hi - parsed.limit)
            rows = tuple(self._txs[k[1]].to_wire() for k in reversed(keys[start:hi]))
            next_cursor = model.encode_cursor(keys[start]) if start > lo else ""
        page = TransactionPage(transactions=rows, next_cursor=next_cursor)
        return Reply(200, json=msgspec.to_builtins(page))

    # --- probes -------------------------------------------------------------------------

    def health(self) -> Reply:
        """`GET /health`: always 200."""
        return Reply(200, json={"status": "ok"})

    def ready(self) -> Reply:
        """`GET /ready`, with a dependency down when the options say so."""
        failed = self.options.ready_failed_dependency
        deps = {name: {"status": "ok"} for name in ("database", "ledger", "tax-authority")}
        if failed is None:
            return Reply(200, json={"status": "ok", "deps": deps})
        deps[failed] = {"status": "down"}
        status = self.options.ready_failed_status
        return Reply(status, json={"status": "unavailable", "deps": deps})
