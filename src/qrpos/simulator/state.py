"""The sandbox's records, indexes, persistence and VAT clock, guarded by one lock so that
uvicorn's thread and a test's thread can use it at the same time."""

from __future__ import annotations

import dataclasses
import heapq
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from qrpos import spec
from qrpos.errors import QrposError
from qrpos.simulator import model
from qrpos.simulator.faults import FaultBook, TokenBucket
from qrpos.simulator.model import (
    SimTransaction,
    Terminal,
    Wallet,
)
from qrpos.simulator.options import SimulatorOptions
from qrpos.simulator.store import SqliteStore, Store


class SandboxError(QrposError, ValueError):
    """An admin call that cannot be done; the message says why."""


class UnknownRecord(SandboxError):
    """No terminal or wallet of that name."""


@dataclasses.dataclass
class IdempotencyEntry:
    """What a terminal's Idempotency-Key is bound to."""

    tx_id: str
    qr_token: str
    amount_mnt: int
    stored_us: int
    response: dict[str, Any]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SandboxState:
    """The records, indexes and persistence; `Sandbox` adds the operations."""

    def __init__(
        self,
        options: SimulatorOptions | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.options = options or SimulatorOptions()
        self.clock = clock or _utc_now
        self.lock = threading.RLock()
        self.faults = FaultBook()
        self.bucket = TokenBucket(self.options.rate_sustained_rps, self.options.rate_burst)
        self._terminals: dict[str, Terminal] = {}
        self._wallets: dict[str, Wallet] = {}
        self._live_tokens: dict[str, str] = {}
        self._retired_tokens: dict[str, str] = {}
        self._txs: dict[str, SimTransaction] = {}
        # Per-terminal history keys (created_us, tx_id), sorted lazily on read.
        self._history: dict[str, list[tuple[int, str]]] = {}
        self._unsorted: set[str] = set()
        self._idempotency: dict[tuple[str, str], IdempotencyEntry] = {}
        self._vat_queue: list[tuple[int, str]] = []
        self._last_us = 0
        self._store: Store = SqliteStore(self.options.db_path) if self.options.db_path else Store()
        self._persistent = self.options.db_path is not None
        self._load()

    # --- time ---------------------------------------------------------------------------

    def now_us(self) -> int:
        """The sandbox clock in microseconds since the epoch (with its configured offset)."""
        return model.to_micros(self.clock()) + int(self.options.clock_offset_s * 1e6)

    def _next_created_us(self) -> int:
        # Commit times strictly increase, so "newest first" matches the order of commits.
        now = max(self.now_us(), self._last_us + 1)
        self._last_us = now
        return now

    # --- persistence --------------------------------------------------------------------

    def _load(self) -> None:
        for row in self._store.load("terminal"):
            self._terminals[row["username"]] = Terminal(**row)
        for row in self._store.load("wallet"):
            wallet = Wallet(**row)
            self._wallets[wallet.wallet_id] = wallet
            self._live_tokens[wallet.qr_token] = wallet.wallet_id
        for row in self._store.load("retired"):
            self._retired_tokens[row["token"]] = row["wallet_id"]
        for row in self._store.load("tx"):
            tx = SimTransaction(
                **{
                    **row,
                    "status": spec.TxStatus(row["status"]),
                    "type": spec.TxType(row["type"]),
                    "vat_status": spec.VatStatus(row["vat_status"]) if row["vat_status"] else None,
                }
            )
            self._index_tx(tx)
        for row in self._store.load("idempotency"):
            slot = (row.pop("username"), row.pop("key"))
            self._idempotency[slot] = IdempotencyEntry(**row)

    def _save_terminal(self, terminal: Terminal) -> None:
        if not self._persistent:
            return
        self._store.put("terminal", terminal.username, dataclasses.asdict(terminal))

    def _save_wallet(self, wallet: Wallet) -> None:
        if not self._persistent:
            return
        self._store.put("wallet", wallet.wallet_id, dataclasses.asdict(wallet))

    def _save_tx(self, tx: SimTransaction) -> None:
        if not self._persistent:
            return
        row = dataclasses.asdict(tx)
        row["status"] = tx.status.value
        row["type"] = tx.type.value
        row["vat_status"] = tx.vat_status.value if tx.vat_status else None
        self._store.put("tx", tx.id, row)

    def _save_idempotency(self, username: str, key: str, entry: IdempotencyEntry | None) -> None:
        if not self._persistent:
            return
        record_id = f"{username}\x00{key}"
        if entry is None:
            self._store.delete("idempotency", record_id)
        else:
            row = dataclasses.asdict(entry) | {"username": username, "key": key}
            self._store.put("idempotency", record_id, row)

    def _retire_token(self, token: str, wallet_id: str) -> None:
        self._live_tokens.pop(token, None)
        self._retired_tokens[token] = wallet_id
        if self._persistent:
            self._store.put("retired", token, {"token": token, "wallet_id": wallet_id})

    def close(self) -> None:
        """Release the SQLite file, if any."""
        with self.lock:
            self._store.close()

    # --- indexes ------------------------------------------------------------------------

    def _index_tx(self, tx: SimTransaction) -> None:
        self._txs[tx.id] = tx
        self._last_us = max(self._last_us, tx.created_us)
        if tx.type is spec.TxType.CHARGE and tx.username is not None:
            keys = self._history.setdefault(tx.username, [])
            if keys and keys[-1] > (tx.created_us, tx.id):
                self._unsorted.add(tx.username)
            keys.append((tx.created_us, tx.id))
        if tx.vat_due_us is not None:
            heapq.heappush(self._vat_queue, (tx.vat_due_us, tx.id))

    def history_keys(self, username: str) -> list[tuple[int, str]]:
        """This terminal's charges as sorted (created_us, tx_id) keys, oldest first."""
        keys = self._history.get(username, [])
        if username in self._unsorted:
            keys.sort()
            self._unsorted.discard(username)
        return keys

    def tx(self, tx_id: str) -> SimTransaction | None:
        return self._txs.get(tx_id)

    def terminal_record(self, username: str) -> Terminal | None:
        return self._terminals.get(username)

    # --- VAT receipts -------------------------------------------------------------------

    def _schedule_vat(self, tx: SimTransaction, due_us: int | None) -> None:
        tx.vat_due_us = due_us
        if due_us is not None:
            heapq.heappush(self._vat_queue, (due_us, tx.id))

    def _vat_step(self, tx: SimTransaction, now_us: int) -> tuple[int, int]:
        """Move one receipt on by one step; returns (issued, voided) counts."""
        reversed_ = tx.status is spec.TxStatus.REVERSED
        if tx.vat_status is spec.VatStatus.PENDING:
            if reversed_ and self.options.reverse_pending_receipt == "void_without_number":
                tx.vat_status = spec.VatStatus.VOIDED
                self._schedule_vat(tx, None)
                return 0, 1
            tx.vat_status = spec.VatStatus.ISSUED
            tx.vat_receipt_id = model.new_receipt_number()
            due = now_us + int(self.options.vat_void_delay_s * 1e6) if reversed_ else None
            self._schedule_vat(tx, due)
            return 1, 0
        if tx.vat_status is spec.VatStatus.ISSUED and reversed_:
            tx.vat_status = spec.VatStatus.VOIDED
            self._schedule_vat(tx, None)
            return 0, 1
        self._schedule_vat(tx, None)
        return 0, 0

    def advance_vat(self) -> None:
        """Apply every receipt change whose delay has passed (called on each request)."""
        now = self.now_us()
        while self._vat_queue and self._vat_queue[0][0] <= now:
            due, tx_id = heapq.heappop(self._vat_queue)
            tx = self._txs.get(tx_id)
            if tx is None or tx.vat_due_us != due:
                continue  # superseded by a later schedule
            self._vat_step(tx, now)
            self._save_tx(tx)
